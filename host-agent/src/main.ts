import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { NvidiaSmiGpuCollector, RecordedGpuCollector, SystemInformationHostCollector } from './collectors/index.js';
import { CliError, USAGE, isHelp, runAgentCli } from './cli/index.js';
import { systemClock } from '@ark/shared';
import type { CliContext, CliLogger } from './cli/context.js';
import { ConfigError, type AgentConfig, loadAgentConfig } from './config.js';
import { readMachineFacts } from './manifest.js';
import { createChannel } from './channel-adapter.js';
import { createJobRuntime } from './job-runtime.js';

// The composition root: the only place that reads process.env and builds the real adapters.

function agentVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof manifest.version === 'string' ? manifest.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

function context(config: AgentConfig): CliContext {
  return {
    config,
    agentVersion: agentVersion(),
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    fetch: globalThis.fetch,
    clock: systemClock,
    now: () => systemClock.now(),
    sleep: (ms) => systemClock.sleep(ms),
    createLogger: (destination): CliLogger =>
      pino(
        { level: config.logLevel, base: { service: 'ark-agent' } },
        pino.destination({ dest: destination === 'stdout' ? 1 : 2, sync: true }),
      ),
    createGpuCollector: async (logger, onError) =>
      config.nvidiaSmiFixtures === null
        ? new NvidiaSmiGpuCollector({ binaryPath: config.nvidiaSmiPath, logger, ...(onError === undefined ? {} : { onError }) })
        : RecordedGpuCollector.fromFiles(config.nvidiaSmiFixtures),
    createHostCollector: (logger, onError) =>
      new SystemInformationHostCollector({ stateDir: config.stateDir, logger, ...(onError === undefined ? {} : { onError }) }),
    readMachineFacts,
    createChannel,
    createJobs: createJobRuntime,
    waitForSignal: (signals) =>
      new Promise((resolve) => {
        for (const signal of signals) process.once(signal, () => resolve(signal));
      }),
    isProcessAlive: (pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch (error) {
        return (error as NodeJS.ErrnoException).code === 'EPERM';
      }
    },
  };
}

async function main(argv: string[]): Promise<number> {
  if (isHelp(argv)) {
    process.stdout.write(USAGE);
    return 0;
  }
  let config: AgentConfig;
  try {
    config = loadAgentConfig({ env: process.env });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`ark-agent: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  return runAgentCli(argv, context(config));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message = error instanceof CliError || error instanceof Error ? error.message : String(error);
    process.stderr.write(`ark-agent: ${message}\n`);
    process.exit(1);
  },
);
