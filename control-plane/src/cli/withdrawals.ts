import { WITHDRAWAL_STATES, type WithdrawalState } from '../domain/withdrawals/states.js';
import { limitOf } from './chain.js';
import { type CliCommand, type CliContext, CliRefusal, printJson, required, text } from './context.js';

// Operator commands for money out: the review queue, a review, and the payout wallet.

/** The withdrawal views reach the deposit views, which load viem: imported when a command runs, not at `--help`. */
const withdrawalViews = () => import('../views/withdrawals.js');

/** `withdrawals list [--state S]`: every account's requests, oldest first (UNSIGNED: the review queue). */
export async function withdrawalsListCommand(ctx: Pick<CliContext, 'services'>, input: { state: string | undefined; limit: number }) {
  let state: WithdrawalState | null = null;
  if (input.state !== undefined) {
    if (!(WITHDRAWAL_STATES as readonly string[]).includes(input.state))
      throw new CliRefusal(`--state must be one of ${WITHDRAWAL_STATES.join(', ')}`);
    state = input.state as WithdrawalState;
  }
  const found = await ctx.services.withdrawals.listByState(state, null, input.limit);
  const { adminWithdrawalView } = await withdrawalViews();
  return { withdrawals: found.map(adminWithdrawalView) };
}

/** `withdrawals review`: the same review as the admin route, in the name of an admin account (audited as it). */
export async function withdrawalsReviewCommand(
  ctx: Pick<CliContext, 'services'>,
  input: { id: string; decision: string; reason: string; adminEmail: string },
) {
  if (input.decision !== 'approve' && input.decision !== 'reject') throw new CliRefusal('--decision must be approve or reject');
  const reason = input.reason.trim();
  if (reason.length < 5 || reason.length > 2000) throw new CliRefusal('--reason must be 5 to 2000 characters');
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(input.id)) throw new CliRefusal('--id must be a UUID');
  const admin = await ctx.services.accounts.accountWithEmail(input.adminEmail);
  if (admin?.role !== 'admin') throw new CliRefusal(`no admin account with email "${input.adminEmail}"`);
  const { withdrawalReviewView } = await withdrawalViews();
  return withdrawalReviewView(
    await ctx.services.withdrawals.review({ id: input.id, adminAccountId: admin.id, decision: input.decision, reason }),
  );
}

/** `payouts wallet`: the payout wallet's address, its USDC and gas balances, and what it still owes. */
export async function payoutsWalletCommand(ctx: Pick<CliContext, 'services' | 'payoutWallet'>) {
  const owed = await ctx.services.withdrawals.pending();
  if (owed === null) throw new CliRefusal('no primary network with USDC is configured (ARK_CHAINS)');
  const wallet = ctx.payoutWallet();
  if (wallet === null) throw new CliRefusal('no payout wallet is configured (ARK_PAYOUT_KEY_FILE)');
  const [usdc, native] = await Promise.all([wallet.tokenBalance(owed.rail.usdc.address), wallet.nativeBalance()]);
  const network = owed.rail.network;
  const { payoutWalletView } = await withdrawalViews();
  return payoutWalletView(
    { network: network.name, chainId: network.chainId, address: wallet.address, usdcMicro: usdc, nativeWei: native },
    owed,
  );
}

export const withdrawalCommands: CliCommand[] = [
  {
    name: 'withdrawals list',
    usage: 'withdrawals list [--state UNSIGNED] [--limit N]    (every account’s withdrawals and payouts, oldest first)',
    options: { state: { type: 'string' }, limit: { type: 'string' } },
    async run(values, ctx) {
      printJson(ctx, await withdrawalsListCommand(ctx, { state: text(values, 'state'), limit: limitOf(text(values, 'limit')) }));
      return 0;
    },
  },
  {
    name: 'withdrawals review',
    usage: 'withdrawals review --id ID --decision approve|reject --reason "..." --admin-email E    (audited as that admin)',
    options: { id: { type: 'string' }, decision: { type: 'string' }, reason: { type: 'string' }, 'admin-email': { type: 'string' } },
    async run(values, ctx) {
      const input = {
        id: required(values, 'id'),
        decision: required(values, 'decision'),
        reason: required(values, 'reason'),
        adminEmail: required(values, 'admin-email'),
      };
      printJson(ctx, await withdrawalsReviewCommand(ctx, input));
      return 0;
    },
  },
  {
    name: 'payouts wallet',
    usage: 'payouts wallet    (the payout wallet: address, USDC and gas balances, requests it still owes)',
    options: {},
    async run(_values, ctx) {
      printJson(ctx, await payoutsWalletCommand(ctx));
      return 0;
    },
  },
];
