import { parseArgs } from 'node:util';
import { type CliContext, CliError } from './context.js';

export { type CliContext, CliError } from './context.js';

export const USAGE = `Usage: ark-agent <command> [options]

Commands:
  pair --control-plane URL    Pair this machine with a host account: prints a one-time code to approve,
                              then enrolls and stores this machine's identity.
       [--enrollment-token T] Enroll with a token from POST /api/v1/hosts/enrollment-tokens instead of a code.
       [--force]              Pair again as a new machine even though an identity exists.
  run                         Run the daemon (channel, heartbeats, telemetry, network tests). Stops on SIGTERM.
  status [--json]             Show the machine id, whether the daemon runs, its connection and counters.
  selftest [--json]           Read the GPUs' identity, run the pinned benchmark image through the job runtime and
           [--image REF@sha256:...]  sign the figures as a hardware receipt; --json prints the signed receipt.
                              Exit 1 when any part failed or ran past selftest_timeout_s.
  help                        Show this text.

Environment:
  ARK_AGENT_STATE_DIR   identity and queues (default /var/lib/ark-agent)
  ARK_AGENT_CONFIG      config file (default /etc/ark-agent/config.json)
  ARK_CONTROL_PLANE_URL, ARK_AGENT_LOG_LEVEL and the other ARK_AGENT_* overrides: see the README.
`;

/** Whether a command needs no configuration at all (help must work even when the config is broken). */
export function isHelp(argv: readonly string[]): boolean {
  const [command] = argv;
  return command === undefined || command === 'help' || command === '--help' || command === '-h';
}

export async function runAgentCli(argv: readonly string[], ctx: CliContext): Promise<number> {
  const [command, ...rest] = argv;
  if (isHelp(argv)) {
    ctx.out(USAGE);
    return 0;
  }
  try {
    switch (command) {
      case 'pair': {
        const { values } = parse(rest, {
          'control-plane': { type: 'string' },
          'enrollment-token': { type: 'string' },
          force: { type: 'boolean' },
        });
        // Each command's module is loaded when that command runs: the daemon never loads pairing's HTTP schemas.
        const { pairCommand } = await import('./pair.js');
        return await pairCommand(ctx, {
          controlPlane: values['control-plane'] as string | undefined,
          enrollmentToken: values['enrollment-token'] as string | undefined,
          force: values.force as boolean | undefined,
        });
      }
      case 'run': {
        parse(rest, {});
        const { runCommand } = await import('./run.js');
        return await runCommand(ctx);
      }
      case 'status': {
        const { values } = parse(rest, { json: { type: 'boolean' } });
        const { statusCommand } = await import('./status.js');
        return await statusCommand(ctx, { json: values.json as boolean | undefined });
      }
      case 'selftest': {
        const { values } = parse(rest, { json: { type: 'boolean' }, image: { type: 'string' } });
        const { selftestCommand } = await import('./selftest.js');
        return await selftestCommand(ctx, { json: values.json as boolean | undefined, image: values.image as string | undefined });
      }
      default:
        throw new CliError(`unknown command "${command}"\n\n${USAGE}`, 2);
    }
  } catch (error) {
    if (error instanceof CliError) {
      ctx.err(`ark-agent: ${error.message}\n`);
      return error.exitCode;
    }
    throw error;
  }
}

type OptionSpec = Record<string, { type: 'string' | 'boolean' }>;

function parse(args: readonly string[], options: OptionSpec): { values: Record<string, string | boolean | undefined> } {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: false, strict: true });
  } catch (error) {
    throw new CliError(`${(error as Error).message}\n\n${USAGE}`, 2);
  }
}
