import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { openConfiguredStore } from '../runtime.js';

export interface CliContext {
  config: Config;
  logger: Logger;
  serve(): Promise<number>;
}

export type CliCommand = {
  /** e.g. "accounts create" */
  name: string;
  usage: string;
  options: NonNullable<Parameters<typeof parseArgs>[0]>['options'];
  run(values: Record<string, string | boolean | (string | boolean)[] | undefined>, ctx: CliContext): Promise<number>;
};

const commands: CliCommand[] = [
  { name: 'serve', usage: 'serve', options: {}, run: (_v, ctx) => ctx.serve() },
  {
    name: 'migrate',
    usage: 'migrate',
    options: {},
    async run(_v, ctx) {
      const store = await openConfiguredStore(ctx.config);
      await store.close();
      process.stdout.write(`migrations applied (${store.dialect})\n`);
      return 0;
    },
  },
];

/** Areas add their operator commands here. */
export function registerCliCommands(more: CliCommand[]): void {
  commands.push(...more);
}

function usage(): string {
  return `usage: ark-cp <command>\n\ncommands:\n${commands.map((c) => `  ${c.usage}`).join('\n')}\n`;
}

export async function runCli(argv: string[], ctx: CliContext): Promise<number> {
  await import('./commands.js');
  const command = [...commands]
    .sort((a, b) => b.name.length - a.name.length)
    .find((c) => {
      const words = c.name.split(' ');
      return words.every((w, i) => argv[i] === w);
    });
  if (argv.length === 0 || ['help', '--help', '-h'].includes(argv[0] ?? '')) {
    process.stdout.write(usage());
    return 0;
  }
  if (!command) {
    process.stderr.write(`ark-cp: unknown command "${argv.join(' ')}"\n\n${usage()}`);
    return 2;
  }
  const rest = argv.slice(command.name.split(' ').length);
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    values = parseArgs({ args: rest, options: command.options ?? {}, strict: true, allowPositionals: false }).values;
  } catch (error) {
    process.stderr.write(`ark-cp ${command.name}: ${(error as Error).message}\nusage: ark-cp ${command.usage}\n`);
    return 2;
  }
  return command.run(values, ctx);
}
