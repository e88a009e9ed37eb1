import type { DepositState } from '../domain/payments/deposits.js';
import { depositViews, limitOf } from './chain.js';
import { type CliCommand, type CliContext, CliRefusal, printJson, required, text } from './context.js';

// Operator commands for held deposits (issue 22): the queue of held and refundable deposits, and the two ways home
// for one that does not fit the balance cap, in the name of an admin account (audited as it, as the admin routes are).

const OPERATOR_STATES: readonly DepositState[] = ['HELD', 'BELOW_MINIMUM', 'REFUNDING', 'REFUNDED'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `deposits held [--state S]`: every account's deposits in a state (HELD by default), oldest final first. */
export async function depositsHeldCommand(ctx: Pick<CliContext, 'services'>, input: { state: string | undefined; limit: number }) {
  const state = (input.state ?? 'HELD') as DepositState;
  if (!OPERATOR_STATES.includes(state)) throw new CliRefusal(`--state must be one of ${OPERATOR_STATES.join(', ')}`);
  const found = await ctx.services.deposits.forOperators(state, null, input.limit);
  const { adminDepositView } = await depositViews();
  return { state, deposits: found.map(adminDepositView) };
}

/** `deposits credit|refund`: the same use cases as the admin routes. */
export async function resolveDepositCommand(
  ctx: Pick<CliContext, 'services'>,
  input: { action: 'credit' | 'refund'; id: string; reason: string; adminEmail: string },
) {
  const reason = input.reason.trim();
  if (reason.length < 5 || reason.length > 2000) throw new CliRefusal('--reason must be 5 to 2000 characters');
  if (!UUID.test(input.id)) throw new CliRefusal('--id must be a UUID');
  const admin = await ctx.services.accounts.accountWithEmail(input.adminEmail);
  if (admin?.role !== 'admin') throw new CliRefusal(`no admin account with email "${input.adminEmail}"`);
  const decision = { depositId: input.id.toLowerCase(), adminAccountId: admin.id, reason };
  const result = input.action === 'credit' ? await ctx.services.deposits.credit(decision) : await ctx.services.deposits.refund(decision);
  const { depositResolutionView } = await depositViews();
  return depositResolutionView(result);
}

const resolveCommand = (action: 'credit' | 'refund'): CliCommand => ({
  name: `deposits ${action}`,
  usage:
    action === 'credit'
      ? 'deposits credit --id ID --reason "..." --admin-email E    (credit a HELD deposit over the cap: a recorded override)'
      : 'deposits refund --id ID --reason "..." --admin-email E    (send a HELD deposit back to its sender through the payout wallet)',
  options: { id: { type: 'string' }, reason: { type: 'string' }, 'admin-email': { type: 'string' } },
  async run(values, ctx) {
    const input = { action, id: required(values, 'id'), reason: required(values, 'reason'), adminEmail: required(values, 'admin-email') };
    printJson(ctx, await resolveDepositCommand(ctx, input));
    return 0;
  },
});

export const depositCommands: CliCommand[] = [
  {
    name: 'deposits held',
    usage: 'deposits held [--state HELD|BELOW_MINIMUM|REFUNDING|REFUNDED] [--limit N]    (held and refundable deposits, oldest first)',
    options: { state: { type: 'string' }, limit: { type: 'string' } },
    async run(values, ctx) {
      printJson(ctx, await depositsHeldCommand(ctx, { state: text(values, 'state'), limit: limitOf(text(values, 'limit')) }));
      return 0;
    },
  },
  resolveCommand('credit'),
  resolveCommand('refund'),
];
