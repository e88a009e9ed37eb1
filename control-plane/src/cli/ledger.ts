import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { sql } from 'kysely';
import { systemClock } from '../clock.js';
import { ledgerAccounts } from '../domain/ledger/accounts.js';
import { MAX_TRANSFER_MICRO } from '../domain/ledger/postings.js';
import { DomainError } from '../errors.js';
import { openConfiguredStore } from '../runtime.js';
import { appendAudit } from '../store/audit.js';
import type { Store } from '../store/db.js';
import { balancesOfOwner, inTransactionWithRetry, transfer, verifyLedger } from '../store/ledger.js';
import { type CliCommand, registerCliCommands } from './index.js';

// Operator commands for the ledger. `ledger credit` stands in for deposits until they exist.

type Values = Parameters<CliCommand['run']>[0];

/** A refusal the operator can act on: printed to stderr, exit code 1. */
export class LedgerCliRefusal extends Error {}

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

export interface CreditOutput {
  account_id: string;
  posting_id: string;
  available_micro: string;
}

/** `ledger credit`: an audited adjustment -> available posting, both in one transaction. */
export async function creditCommand(store: Store, input: CreditInput, now: Date): Promise<CreditOutput> {
  if (!DECIMAL.test(input.amountMicro))
    throw new LedgerCliRefusal(`--amount-micro must be a positive whole number of micro-USDC, got "${input.amountMicro}"`);
  const amountMicro = BigInt(input.amountMicro);
  if (amountMicro > MAX_TRANSFER_MICRO) throw new LedgerCliRefusal(`--amount-micro must be at most ${MAX_TRANSFER_MICRO}`);
  const reason = input.reason.trim();
  if (reason.length === 0 || reason.length > MAX_REASON_LENGTH)
    throw new LedgerCliRefusal(`--reason must be 1 to ${MAX_REASON_LENGTH} characters`);
  const email = input.email.trim().toLowerCase();
  // The accounts module owns the table; a plain lookup keeps this command independent of its code.
  const found = await sql<{ id: string }>`select id from accounts where email = ${email}`.execute(store.db);
  const accountId = found.rows[0]?.id;
  if (!accountId) throw new LedgerCliRefusal(`no account with email "${input.email}"`);
  const operator = input.operator ?? safeUserName();
  return inTransactionWithRetry(store, async (trx) => {
    const posted = await transfer(trx, {
      from: ledgerAccounts.adjustment(),
      to: ledgerAccounts.available(accountId),
      amountMicro,
      kind: 'adjustment',
      reference: `credit:${randomUUID()}`,
      at: now,
    });
    await appendAudit(trx, {
      at: now,
      actorAccountId: null,
      action: 'ledger.credited_by_operator',
      subject: accountId,
      detail: { posting_id: posted.postingId, amount_micro: amountMicro.toString(), reason, operator },
    });
    return { account_id: accountId, posting_id: posted.postingId, available_micro: posted.toBalanceMicro.toString() };
  });
}

export interface BalanceOutput {
  account_id: string;
  available_micro: string;
  held_micro: string;
  payable_micro: string;
}

/** `ledger balance`: an account's balances as the ledger holds them, a host's payable included (no HTTP route shows it yet). */
export async function balanceCommand(store: Store, input: { email: string }): Promise<BalanceOutput> {
  const email = input.email.trim().toLowerCase();
  const found = await sql<{ id: string }>`select id from accounts where email = ${email}`.execute(store.db);
  const accountId = found.rows[0]?.id;
  if (!accountId) throw new LedgerCliRefusal(`no account with email "${input.email}"`);
  const balances = await balancesOfOwner(store.db, accountId);
  return {
    account_id: accountId,
    available_micro: balances.availableMicro.toString(),
    held_micro: balances.heldMicro.toString(),
    payable_micro: balances.payableMicro.toString(),
  };
}

/** `ledger verify`: every cached balance recomputed from the postings; exit code 1 when anything disagrees. */
export async function verifyCommand(store: Store) {
  const report = await verifyLedger(store);
  return {
    ok: report.ok,
    accounts: report.accounts.toString(),
    postings: report.postings.toString(),
    sum_micro: report.sumMicro.toString(),
    discrepancies: report.discrepancies.map((d) => ({
      key: d.key,
      problem: d.problem,
      cached_micro: d.cachedMicro.toString(),
      recomputed_micro: d.recomputedMicro.toString(),
    })),
  };
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new LedgerCliRefusal(`--${name} is required`);
  return value;
}

async function withStore(
  config: Parameters<typeof openConfiguredStore>[0],
  name: string,
  run: (store: Store) => Promise<object>,
): Promise<number> {
  let store: Store | null = null;
  try {
    store = await openConfiguredStore(config);
    const result = await run(store);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return (result as { ok?: unknown }).ok === false ? 1 : 0;
  } catch (error) {
    if (error instanceof LedgerCliRefusal || error instanceof DomainError) {
      process.stderr.write(`ark-cp ${name}: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    await store?.close();
  }
}

export const ledgerCommands: CliCommand[] = [
  {
    name: 'ledger credit',
    usage: 'ledger credit --email E --amount-micro N --reason "..."',
    options: { email: { type: 'string' }, 'amount-micro': { type: 'string' }, reason: { type: 'string' } },
    run: (values, ctx) =>
      withStore(ctx.config, 'ledger credit', async (store) =>
        creditCommand(
          store,
          { email: required(values, 'email'), amountMicro: required(values, 'amount-micro'), reason: required(values, 'reason') },
          systemClock.now(),
        ),
      ),
  },
  {
    name: 'ledger balance',
    usage: 'ledger balance --email E    (available, held and payable, in micro-USDC)',
    options: { email: { type: 'string' } },
    run: (values, ctx) => withStore(ctx.config, 'ledger balance', (store) => balanceCommand(store, { email: required(values, 'email') })),
  },
  {
    name: 'ledger verify',
    usage: 'ledger verify',
    options: {},
    run: (_values, ctx) => withStore(ctx.config, 'ledger verify', (store) => verifyCommand(store)),
  },
];

registerCliCommands(ledgerCommands);
