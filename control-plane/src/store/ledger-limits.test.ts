// The ledger's bounds (issue 7 item 2): an amount past MAX_TRANSFER_MICRO, or a transfer that would take a balance past
// LEDGER_BALANCE_MAX_MICRO either way, is refused as a domain error with a stable code, never a 500, and changes nothing.
import { randomUUID } from 'node:crypto';
import { ERROR_CATALOG } from '@ark/shared';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerAccountKey, ledgerAccounts } from '../domain/ledger/accounts.js';
import { LEDGER_BALANCE_MAX_MICRO, MAX_TRANSFER_MICRO } from '../domain/ledger/postings.js';
import { DomainError } from '../errors.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { balanceOf, runTransfer, type TransferInput } from './ledger.js';

const at = new Date('2026-03-01T12:00:00.000Z');

async function refusal(promise: Promise<unknown>): Promise<DomainError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('the transfer was not refused');
}

describe.each(DIALECTS)('ledger limits on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.destroy();
  });

  const deposit = (renter: string, amountMicro: bigint, source = 'world'): TransferInput => ({
    from: ledgerAccounts.external(source),
    to: ledgerAccounts.available(renter),
    amountMicro,
    kind: 'deposit',
    reference: `deposit-${renter}`,
    at,
  });

  /** Sets a cached balance directly: reaching 10^18 through real postings would take a thousand of them. */
  const setBalance = async (key: string, balanceMicro: bigint) => {
    await sql`update ledger_accounts set balance_micro = ${balanceMicro} where key = ${key}`.execute(store.db);
  };

  it('refuses an amount past MAX_TRANSFER_MICRO as AMOUNT_TOO_LARGE (422), and moves exactly the bound', async () => {
    const renter = randomUUID();
    for (const amount of [MAX_TRANSFER_MICRO + 1n, 2n ** 63n - 1n, 2n ** 63n, 10n ** 37n]) {
      const error = await refusal(runTransfer(store, deposit(renter, amount)));
      expect(error.code).toBe('AMOUNT_TOO_LARGE');
      expect(error.status).toBe(ERROR_CATALOG.AMOUNT_TOO_LARGE.status);
      expect(error.status).toBe(422);
    }
    expect(await balanceOf(store.db, ledgerAccounts.available(renter))).toBe(0n);
    const posted = await runTransfer(store, deposit(renter, MAX_TRANSFER_MICRO));
    expect(posted.toBalanceMicro).toBe(MAX_TRANSFER_MICRO);
  });

  it('refuses a credit that would take a balance past LEDGER_BALANCE_MAX_MICRO as BALANCE_LIMIT_EXCEEDED (409)', async () => {
    const renter = randomUUID();
    await runTransfer(store, deposit(renter, 1n));
    await setBalance(ledgerAccountKey(renter, 'available'), LEDGER_BALANCE_MAX_MICRO - 5n);
    const error = await refusal(runTransfer(store, deposit(renter, 6n)));
    expect(error.code).toBe('BALANCE_LIMIT_EXCEEDED');
    expect(error.status).toBe(409);
    expect(await balanceOf(store.db, ledgerAccounts.available(renter))).toBe(LEDGER_BALANCE_MAX_MICRO - 5n);
    await runTransfer(store, deposit(renter, 5n));
    expect(await balanceOf(store.db, ledgerAccounts.available(renter))).toBe(LEDGER_BALANCE_MAX_MICRO);
  });

  it('refuses a debit that would take a signed account below -LEDGER_BALANCE_MAX_MICRO', async () => {
    const source = `rail-${randomUUID()}`;
    const renter = randomUUID();
    await runTransfer(store, deposit(renter, 1n, source));
    await setBalance(ledgerAccountKey(source, 'external'), -LEDGER_BALANCE_MAX_MICRO + 2n);
    expect((await refusal(runTransfer(store, deposit(renter, 3n, source)))).code).toBe('BALANCE_LIMIT_EXCEEDED');
    await runTransfer(store, deposit(renter, 2n, source));
    expect(await balanceOf(store.db, ledgerAccounts.external(source))).toBe(-LEDGER_BALANCE_MAX_MICRO);
  });
});
