import { Command, CommanderError } from 'commander';
import { registerAccessCommands } from './commands/access.js';
import { registerAccountCommands } from './commands/account.js';
import { registerHostCommands } from './commands/host.js';
import { registerImageCommands } from './commands/images.js';
import { registerJobCommands } from './commands/jobs.js';
import { registerMcpCommand } from './commands/mcp.js';
import { registerMoneyOutCommands } from './commands/money-out.js';
import { registerOfferCommands } from './commands/offers.js';
import { registerTopUpCommand } from './commands/topup.js';
import { EXIT } from './exit-codes.js';

// `ark`: the CLI for renters and hosts, over the control plane's public HTTP API only. The composition root: the
// only place that reads process.argv; the environment is read by config.ts (ARK_URL, ARK_API_KEY, ARK_CONFIG_DIR).

export function buildProgram(): Command {
  const program = new Command('ark')
    .description('Rent GPU machines on Ark, and host your own. Every command takes --json for scripts.')
    .version('0.1.0')
    .option('--json', 'print one JSON document (or NDJSON for followed streams) on stdout')
    .option('--url <url>', 'control plane base URL (default: $ARK_URL, the stored one, or http://127.0.0.1:8080)')
    .showHelpAfterError()
    .addHelpText(
      'after',
      '\nCredentials: ARK_API_KEY, or `ark login` (stored 0600 in $ARK_CONFIG_DIR or $XDG_CONFIG_HOME/ark).\n' +
        'Exit codes: 0 ok, 1 API error, 2 usage, 3 auth, 4 not found, 5 conflict, 6 unreachable, 7 job failed or wait timed out,\n' +
        '8 payment required, 130 interrupted; `ark ssh`/`ark sftp` exit with ssh’s own code.',
    );
  registerAccountCommands(program);
  registerOfferCommands(program);
  registerImageCommands(program);
  registerJobCommands(program);
  registerAccessCommands(program);
  registerTopUpCommand(program);
  registerHostCommands(program);
  registerMoneyOutCommands(program);
  registerMcpCommand(program);
  // Usage errors of every subcommand exit 2, not commander's 1.
  const exitOverride = (command: Command) => {
    command.exitOverride();
    for (const sub of command.commands) exitOverride(sub);
  };
  exitOverride(program);
  return program;
}

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exitCode = error.exitCode === 0 ? EXIT.ok : EXIT.usage;
  } else {
    process.stderr.write(`ark: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = EXIT.apiError;
  }
}
