import { type CliCommand, type CliContext, CliRefusal, printJson, required, text } from './context.js';

/** The deposit views load viem: imported when a command runs, so `ark-cp --help` never loads it. */
export const depositViews = () => import('../views/deposits.js');

// Operator commands for money in: each watched network's progress, and an account's deposits.

/** `chain status`: per network, head, finalized, cursor, lag, the finality alert, the lease and deposit counts. */
export async function chainStatusCommand(ctx: Pick<CliContext, 'services'>) {
  const { networkStatusView } = await depositViews();
  return { networks: (await ctx.services.deposits.chainStatus()).map(networkStatusView) };
}

/** `deposits list --email E`: the account's money in, newest first: chain deposits and x402 top-ups, each listed apart. */
export async function depositsListCommand(ctx: Pick<CliContext, 'services'>, input: { email: string; limit: number }) {
  const account = await ctx.services.accounts.accountWithEmail(input.email);
  if (!account) throw new CliRefusal(`no account with email "${input.email}"`);
  const { depositView, topUpView } = await depositViews();
  const [deposits, topUps] = await Promise.all([
    ctx.services.deposits.history(account.id, null, input.limit),
    ctx.services.x402.history(account.id, null, input.limit),
  ]);
  return { account_id: account.id, deposits: deposits.map(depositView), top_ups: topUps.slice(0, input.limit).map(topUpView) };
}

/** `--limit`: 1..100, 100 when absent. */
export function limitOf(raw: string | undefined): number {
  if (raw === undefined) return 100;
  if (!/^[1-9][0-9]{0,2}$/.test(raw) || Number(raw) > 100) throw new CliRefusal('--limit must be 1..100');
  return Number(raw);
}

export const chainCommands: CliCommand[] = [
  {
    name: 'chain status',
    usage: 'chain status    (per watched network: head, finalized, cursor, lag, finality alert, lease, deposits by state)',
    options: {},
    async run(_values, ctx) {
      printJson(ctx, await chainStatusCommand(ctx));
      return 0;
    },
  },
  {
    name: 'deposits list',
    usage: "deposits list --email E [--limit N]    (the account's deposits and x402 top-ups, newest first, at most 100 each)",
    options: { email: { type: 'string' }, limit: { type: 'string' } },
    async run(values, ctx) {
      printJson(ctx, await depositsListCommand(ctx, { email: required(values, 'email'), limit: limitOf(text(values, 'limit')) }));
      return 0;
    },
  },
];
