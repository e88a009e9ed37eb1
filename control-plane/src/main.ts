// First, before any other module loads: keeps Node's tick-object maps alive through the collections that loading
// the control plane runs (startup/keep-tick-maps.ts explains why).
import './startup/keep-tick-maps.js';
import { pino } from 'pino';
import { runCli } from './cli/index.js';
import { ConfigError, loadConfig } from './config/index.js';
import { systemClock } from './clock.js';

// The composition root: the only place that reads process.env; runtime.ts builds every real adapter from what it read.
async function main(argv: string[]): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`ark-cp: configuration error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const logger = pino({ level: config.logLevel });
  // The one real clock: every timer and reading of the time below it is this one, handed down.
  const clock = systemClock;
  return runCli(argv, {
    config,
    logger,
    clock,
    serve: async () => (await import('./serve.js')).serve(config, logger, clock),
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`ark-cp: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
