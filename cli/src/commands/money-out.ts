import type { Command } from 'commander';
import { action } from '../action.js';
import type { ApiClient } from '../client.js';
import type { CommandContext } from '../context.js';
import { usageError } from '../exit-codes.js';
import { formatUsdc, usdcToMicro } from '../money.js';
import { STEP_UP_HELP, type StepUpOptions, withStepUp } from '../step-up.js';

// Money out (POST /api/v1/withdrawals): any account may hold both balances, and the request names the one it draws.
// `ark withdraw` takes the available balance (deposits, top-ups, refunds) by default, `--from payable` the host
// earnings; `ark payout` is `ark withdraw --from payable`. The request then needs the renter or the host scope.

const BALANCES = ['available', 'payable'] as const;
type Balance = (typeof BALANCES)[number];

interface MoneyOutOptions extends StepUpOptions {
  amount: string;
  to: string;
  network?: string;
}

interface WithdrawalAnswer {
  id: string;
  kind: string;
  state: string;
  amount_micro: string;
  address: string;
  hold_reasons: string[];
}

/** The withdrawal address id for `--to`: an id as given, or an EVM address, registered when the account has none like it. */
async function addressIdFor(api: ApiClient, to: string): Promise<string> {
  if (!/^0x[0-9a-fA-F]{40}$/.test(to)) return to;
  const known = await api.all<{ id: string; address: string }>('/api/v1/withdrawal-addresses');
  const found = known.find((a) => a.address.toLowerCase() === to.toLowerCase());
  if (found) return found.id;
  return (await api.post<{ id: string }>('/api/v1/withdrawal-addresses', { address: to, label: 'ark CLI' }, { idempotent: true })).id;
}

async function moneyOut(ctx: CommandContext, balance: Balance, options: MoneyOutOptions): Promise<void> {
  const amount = usdcToMicro(options.amount, '--amount');
  const made = await withStepUp(ctx.api, options, ctx.env, async (api) =>
    api.post<WithdrawalAnswer>(
      '/api/v1/withdrawals',
      {
        balance,
        amount_micro: amount.toString(),
        withdrawal_address_id: await addressIdFor(api, options.to),
        ...(options.network === undefined ? {} : { network: options.network }),
      },
      { idempotent: true },
    ),
  );
  const what = made.kind === 'payout' ? 'Payout' : 'Withdrawal';
  ctx.out.result(made, () =>
    ctx.out.line(
      `${what} ${made.id}: ${formatUsdc(made.amount_micro)} USDC to ${made.address}, ${made.state}` +
        (made.hold_reasons.length > 0 ? ` (held for review: ${made.hold_reasons.join(', ')})` : ''),
    ),
  );
}

function moneyOutOptions(command: Command): Command {
  return command
    .requiredOption('--amount <usdc>', 'amount in USDC')
    .requiredOption('--to <address>', 'an EVM address (registered as a withdrawal address if new) or a withdrawal address id')
    .option('--network <network>', 'network of the transfer (default: the primary one)')
    .option('--totp <code>', 'TOTP code for the step-up (with the password)')
    .option('--password-stdin', 'read the password for the step-up from standard input');
}

export function registerMoneyOutCommands(program: Command): void {
  moneyOutOptions(
    program
      .command('withdraw')
      .description(
        `Withdraw USDC to an address: the available balance (renter scope), or host earnings with --from payable (host scope); needs a ${STEP_UP_HELP}`,
      )
      .option('--from <balance>', 'the balance to draw: available or payable', 'available'),
  ).action(
    action(async (ctx, options: MoneyOutOptions & { from: string }) => {
      if (!(BALANCES as readonly string[]).includes(options.from)) throw usageError('--from is available or payable');
      await moneyOut(ctx, options.from as Balance, options);
    }),
  );

  moneyOutOptions(
    program
      .command('payout')
      .description(`Be paid out payable host earnings in USDC to an address (ark withdraw --from payable; needs a ${STEP_UP_HELP})`),
  ).action(action(async (ctx, options: MoneyOutOptions) => moneyOut(ctx, 'payable', options)));
}
