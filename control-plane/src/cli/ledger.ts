import { userInfo } from 'node:os';
import { MAX_TRANSFER_MICRO } from '../domain/ledger/postings.js';
import { type BalanceOutput, balanceView, type CreditOutput, creditView, ledgerVerificationView } from '../views/ledger.js';
import { type CliCommand, type CliContext, CliRefusal, printJson, required } from './context.js';

// Operator commands for the ledger. `ledger credit` stands in for deposits until they exist.

const DECIMAL = /^[1-9][0-9]{0,18}$/;
const MAX_REASON_LENGTH = 500;

export interface CreditInput {
  email: string;
  /** Decimal string as typed by the operator. */
  amountMicro: string;
  reason: string;
  /** Who ran it, for the audit row (the OS user by default). */
  operator?: string;
}

/** The account an operator names by email (any case, stray spaces), or a refusal. */
async function accountIdOf(ctx: Pick<CliContext, 'services'>, email: string): Promise<string> {
  const account = await ctx.services.accounts.accountWithEmail(email);
  if (!account) throw new CliRefusal(`no account with email "${email}"`);
  return account.id;
}

/** `ledger credit`: an audited adjustment -> available posting, both in one transaction. */
export async function creditCommand(ctx: Pick<CliContext, 'services'>, input: CreditInput): Promise<CreditOutput> {
  if (!DECIMAL.test(input.amountMicro))
    throw new CliRefusal(`--amount-micro must be a positive whole number of micro-USDC, got "${input.amountMicro}"`);
  const amountMicro = BigInt(input.amountMicro);
  if (amountMicro > MAX_TRANSFER_MICRO) throw new CliRefusal(`--amount-micro must be at most ${MAX_TRANSFER_MICRO}`);
  const reason = input.reason.trim();
  if (reason.length === 0 || reason.length > MAX_REASON_LENGTH)
    throw new CliRefusal(`--reason must be 1 to ${MAX_REASON_LENGTH} characters`);
  const accountId = await accountIdOf(ctx, input.email);
  const credited = await ctx.services.billing.credit({ accountId, amountMicro, reason, operator: input.operator ?? safeUserName() });
  return creditView(accountId, credited);
}

/** `ledger balance`: an account's balances as the ledger holds them, a host's payable included (no HTTP route shows it yet). */
export async function balanceCommand(ctx: Pick<CliContext, 'services'>, input: { email: string }): Promise<BalanceOutput> {
  const accountId = await accountIdOf(ctx, input.email);
  return balanceView(accountId, await ctx.services.billing.balances(accountId));
}

/** `ledger verify`: every cached balance recomputed from the postings. */
export async function verifyCommand(ctx: Pick<CliContext, 'services'>) {
  return ledgerVerificationView(await ctx.services.billing.verifyLedger());
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

export const ledgerCommands: CliCommand[] = [
  {
    name: 'ledger credit',
    usage: 'ledger credit --email E --amount-micro N --reason "..."',
    options: { email: { type: 'string' }, 'amount-micro': { type: 'string' }, reason: { type: 'string' } },
    async run(values, ctx) {
      const input = { email: required(values, 'email'), amountMicro: required(values, 'amount-micro'), reason: required(values, 'reason') };
      printJson(ctx, await creditCommand(ctx, input));
      return 0;
    },
  },
  {
    name: 'ledger balance',
    usage: 'ledger balance --email E    (available, held and payable, in micro-USDC)',
    options: { email: { type: 'string' } },
    async run(values, ctx) {
      printJson(ctx, await balanceCommand(ctx, { email: required(values, 'email') }));
      return 0;
    },
  },
  {
    name: 'ledger verify',
    usage: 'ledger verify',
    options: {},
    // Exit code 1 when anything disagrees.
    async run(_values, ctx) {
      const report = await verifyCommand(ctx);
      printJson(ctx, report);
      return report.ok ? 0 : 1;
    },
  },
];
