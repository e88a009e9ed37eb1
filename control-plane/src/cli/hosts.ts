import { hostingBlockView } from '../views/accounts.js';
import { type CliCommand, type CliContext, CliRefusal, printJson } from './context.js';

// Operator commands for hosting: the admin block (no new machines, no offer commits), and a machine's self-test.

/** `hosts block` / `hosts unblock`: sets the account's hosting block, audited with the operator's reason. */
export async function setHostingBlockCommand(
  ctx: Pick<CliContext, 'services'>,
  input: { email: string; blocked: boolean; reason: string },
) {
  const reason = input.reason.trim();
  if (reason.length < 5) throw new CliRefusal('--reason must say why, in at least 5 characters');
  const account = await ctx.services.accounts.accountWithEmail(input.email);
  if (!account) throw new CliRefusal(`no account with email ${input.email.trim()}`);
  const { hostEnabled } = await ctx.services.accounts.setHostingBlock({ accountId: account.id, blocked: input.blocked, reason });
  return hostingBlockView(account, input.blocked, hostEnabled);
}

function blockCommand(blocked: boolean): CliCommand {
  const name = blocked ? 'hosts block' : 'hosts unblock';
  return {
    name,
    usage: `${name} --email E --reason R`,
    options: { email: { type: 'string' }, reason: { type: 'string' } },
    async run(values, ctx) {
      const email = typeof values.email === 'string' ? values.email : '';
      const reason = typeof values.reason === 'string' ? values.reason : '';
      if (!email) {
        ctx.err(`ark-cp ${name}: --email is required\n`);
        return 2;
      }
      printJson(ctx, await setHostingBlockCommand(ctx, { email, blocked, reason }));
      return 0;
    },
  };
}

/** `machines selftest --id ID`: queues a run_selftest for any machine, as an operator (issue 24 item 2). */
const selftestCommand: CliCommand = {
  name: 'machines selftest',
  usage:
    'machines selftest --id <machine uuid>    (queue a hardware self-test; its signed receipt shows at /api/v1/machines/{id}/verification)',
  options: { id: { type: 'string' } },
  async run(values, ctx) {
    const id = typeof values.id === 'string' ? values.id : '';
    if (!id) {
      ctx.err('ark-cp machines selftest: --id is required\n');
      return 2;
    }
    const queued = await ctx.services.hosting.queueSelftest({ accountId: 'operator', admin: true }, id);
    // The view reaches the contract's schemas: loaded when the command runs, not at `ark-cp --help`.
    const { selftestQueuedView } = await import('../views/verification.js');
    printJson(ctx, selftestQueuedView(id, queued));
    return 0;
  },
};

export const hostCommands: CliCommand[] = [blockCommand(true), blockCommand(false), selftestCommand];
