import { hostingBlockView } from '../views/accounts.js';
import { type CliCommand, type CliContext, CliRefusal, printJson } from './context.js';

// Operator commands for hosting: the admin block (no new machines, no offer commits).

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

export const hostCommands: CliCommand[] = [blockCommand(true), blockCommand(false)];
