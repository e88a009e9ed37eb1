import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import { accountCommands } from './accounts.js';
import { admissionCommands } from './admissions.js';
import { chainCommands } from './chain.js';
import { type CliCommand, type CliContext, type CliValues, refusalLines } from './context.js';
import { depositCommands } from './deposits.js';
import { hostCommands } from './hosts.js';
import { jobCommands } from './jobs.js';
import { ledgerCommands } from './ledger.js';
import { templateCommands } from './templates.js';
import { treasuryCommands } from './treasury.js';
import { withdrawalCommands } from './withdrawals.js';

export { type CliCommand, type CliContext, CliRefusal } from './context.js';

/** What main.ts hands the CLI: the configuration, a logger, the clock and how to serve; output for tests. */
export interface CliEnvironment {
  config: Config;
  logger: Logger;
  /** `ark-cp serve`: builds its own runtime and listens until a signal. */
  serve(): Promise<number>;
  /** The one clock main.ts built (a ManualClock in tests). */
  clock: Clock;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

const migrateCommand: CliCommand = {
  name: 'migrate',
  usage: 'migrate',
  options: {},
  // Opening the configured store migrated it.
  async run(_values, ctx) {
    ctx.out(`migrations applied (${ctx.store.dialect})\n`);
    return 0;
  },
};

/** Every operator command, in the order `help` lists them (after `serve`). */
const COMMANDS: readonly CliCommand[] = [
  migrateCommand,
  ...accountCommands,
  ...templateCommands,
  ...ledgerCommands,
  ...admissionCommands,
  ...hostCommands,
  ...jobCommands,
  ...chainCommands,
  ...depositCommands,
  ...withdrawalCommands,
  ...treasuryCommands,
];

function usage(): string {
  return `usage: ark-cp <command>\n\ncommands:\n  serve\n${COMMANDS.map((c) => `  ${c.usage}`).join('\n')}\n`;
}

/** The command named by the longest matching prefix of argv ("accounts create" before "accounts"). */
function commandOf(argv: readonly string[]): CliCommand | undefined {
  return [...COMMANDS].sort((a, b) => b.name.length - a.name.length).find((c) => c.name.split(' ').every((word, i) => argv[i] === word));
}

export async function runCli(argv: string[], env: CliEnvironment): Promise<number> {
  const out = env.out ?? ((text: string) => void process.stdout.write(text));
  const err = env.err ?? ((text: string) => void process.stderr.write(text));
  if (argv.length === 0 || ['help', '--help', '-h'].includes(argv[0] ?? '')) {
    out(usage());
    return 0;
  }
  const command = argv[0] === 'serve' ? null : commandOf(argv);
  const name = command?.name ?? 'serve';
  if (command === undefined) {
    err(`ark-cp: unknown command "${argv.join(' ')}"\n\n${usage()}`);
    return 2;
  }
  const rest = argv.slice(name.split(' ').length);
  // Every command answers --help with its own usage, before its options are checked.
  if (rest.includes('--help') || rest.includes('-h')) {
    out(`usage: ark-cp ${command?.usage ?? 'serve'}\n`);
    return 0;
  }
  let values: CliValues;
  try {
    values = parseArgs({ args: rest, options: command?.options ?? {}, strict: true, allowPositionals: false }).values;
  } catch (error) {
    err(`ark-cp ${name}: ${(error as Error).message}\nusage: ark-cp ${command?.usage ?? 'serve'}\n`);
    return 2;
  }
  if (command === null) return env.serve();
  return runOverStore(command, values, { ...env, out, err });
}

/** Opens the configured store, builds the services over it, runs the command, and closes both whatever happens. */
async function runOverStore(
  command: CliCommand,
  values: CliValues,
  env: CliEnvironment & Pick<CliContext, 'out' | 'err'>,
): Promise<number> {
  const { config, logger, clock } = env;
  // Loaded here, not at the top: `ark-cp --help` and a refused argument never load the store, the services or the
  // chain clients.
  const [{ logMailer }, { openConfiguredStore, payoutWalletOf, serviceAdapters }, { buildServices }] = await Promise.all([
    import('../mail.js'),
    import('../runtime.js'),
    import('../services/index.js'),
  ]);
  const store = await openConfiguredStore(config);
  // Operator commands send no mail of their own; anything that would goes to the log. The adapters come from the
  // composition root's builders, as `ark-cp serve` gets them; no command settles x402 or registers agents.
  const services = buildServices({
    store,
    clock,
    config,
    mailer: logMailer((line) => logger.info(line)),
    logger,
    ...serviceAdapters(config, clock),
    x402Chain: null,
    walletCode: null,
  });
  const ctx: CliContext = {
    config,
    logger,
    clock,
    store,
    services,
    // Read from its key file only by the command that asks.
    payoutWallet: () => payoutWalletOf(config),
    out: env.out,
    err: env.err,
  };
  try {
    return await command.run(values, ctx);
  } catch (error) {
    const lines = refusalLines(error);
    if (lines === null) throw error;
    for (const line of lines) ctx.err(`ark-cp ${command.name}: ${line}\n`);
    return 1;
  } finally {
    await services.close();
    await store.close();
  }
}
