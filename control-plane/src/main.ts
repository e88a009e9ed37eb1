// First, before any other module loads: keeps Node's tick-object maps alive through the collections that loading
// the control plane runs (startup/keep-tick-maps.ts explains why).
import './startup/keep-tick-maps.js';
import { pino } from 'pino';
import { runCli } from './cli/index.js';
import { ConfigError, loadConfig } from './config/index.js';
import { systemClock } from './clock.js';

/**
 * A person at a terminal reads one line per event: `12:00:01.250 INFO  GET /api/v1/jobs 200 3.1 ms`. pino-pretty is
 * loaded only then, and writes in this thread (no transport worker). Production keeps JSON (ARK_LOG_FORMAT).
 */
async function prettyLogger(level: string) {
  const { default: pretty } = await import('pino-pretty');
  type Line = Record<string, unknown> & { req?: { method?: string; url?: string }; res?: { statusCode?: number }; responseTime?: number };
  const stream = pretty({
    colorize: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,req,res,responseTime',
    singleLine: true,
    messageFormat: (line: Line, messageKey: string) =>
      line.req && line.res
        ? `${line.req.method} ${line.req.url} ${line.res.statusCode} ${Number(line.responseTime ?? 0).toFixed(1)} ms`
        : String(line[messageKey] ?? ''),
  });
  return pino({ level }, stream);
}

// The composition root: the only place that reads process.env; runtime.ts builds every real adapter from what it read.
async function main(argv: string[]): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env, { stdoutIsTerminal: process.stdout.isTTY === true });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`ark-cp: configuration error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const logger = config.logFormat === 'pretty' ? await prettyLogger(config.logLevel) : pino({ level: config.logLevel });
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
