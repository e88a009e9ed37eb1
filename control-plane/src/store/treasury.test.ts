import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerAccounts } from '../domain/ledger/accounts.js';
import type { PostingKind } from '../domain/ledger/postings.js';
import type { WithdrawalState } from '../domain/withdrawals/states.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { runTransfer } from './ledger.js';
import { ledgerLiabilities, payoutWalletAddresses } from './treasury.js';

// What the reconciliation reads from the store, on both dialects: the liabilities per kind of ledger account in one
// statement, the locks of requests already signed or broadcast, and the payout wallets that signed.

const at = new Date('2026-03-01T12:00:00.000Z');

describe.each(DIALECTS)('treasury reads on %s', (dialect) => {
  let store: TestStore;
  const renter = randomUUID();
  const host = randomUUID();
  const job = randomUUID();

  const move = (
    from: Parameters<typeof runTransfer>[1]['from'],
    to: Parameters<typeof runTransfer>[1]['to'],
    micro: bigint,
    kind: PostingKind,
  ) => runTransfer(store, { from, to, amountMicro: micro, kind, reference: randomUUID(), at });
  const request = async (id: string, state: WithdrawalState, micro: bigint) =>
    store.db
      .insertInto('withdrawals')
      .values({
        id,
        account_id: renter,
        kind: 'withdrawal',
        state,
        amount_micro: micro,
        network: 'base',
        chain_id: 8453n,
        token_address: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
        withdrawal_address_id: randomUUID(),
        address: '0x1111111111111111111111111111111111111111',
        address_version: 1n,
        hold_reasons: '[]',
        approved: 0n,
        reviewed_by: null,
        reviewed_at: null,
        review_reason: null,
        payer_address: null,
        nonce: null,
        raw_tx: null,
        tx_hash: null,
        max_fee_per_gas: null,
        max_priority_fee_per_gas: null,
        signed_at: null,
        broadcast_at: null,
        block_number: null,
        fee_wei: null,
        confirmed_at: null,
        failure_reason: null,
        created_at: at.toISOString(),
        updated_at: at.toISOString(),
      })
      .execute();

  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.destroy();
  });

  it('owes available, held, payable and locked; fees are the platform’s own; in flight is what was signed or sent', async () => {
    expect(await ledgerLiabilities(store.db)).toEqual({
      availableMicro: 0n,
      heldMicro: 0n,
      pendingMicro: 0n,
      payableMicro: 0n,
      lockedMicro: 0n,
      inFlightMicro: 0n,
    });
    await move(ledgerAccounts.external('chain:8453'), ledgerAccounts.available(renter), 100_000_000n, 'deposit');
    await move(ledgerAccounts.available(renter), ledgerAccounts.hold(job, renter), 30_000_000n, 'reservation');
    await move(ledgerAccounts.hold(job, renter), ledgerAccounts.payable(host), 10_000_000n, 'charge_host');
    await move(ledgerAccounts.hold(job, renter), ledgerAccounts.fees(), 2_000_000n, 'charge_fee');
    const sent = randomUUID();
    const waiting = randomUUID();
    const signed = randomUUID();
    await move(ledgerAccounts.available(renter), ledgerAccounts.lock(sent, renter), 20_000_000n, 'withdrawal_lock');
    await move(ledgerAccounts.available(renter), ledgerAccounts.lock(waiting, renter), 5_000_000n, 'withdrawal_lock');
    await move(ledgerAccounts.available(renter), ledgerAccounts.lock(signed, renter), 3_000_000n, 'withdrawal_lock');
    await request(sent, 'BROADCAST', 20_000_000n);
    await request(waiting, 'INTENT', 5_000_000n);
    await request(signed, 'SIGNED', 3_000_000n);
    // Paid and failed requests hold no lock any more, and are not in flight.
    await request(randomUUID(), 'CONFIRMED', 7_000_000n);
    await request(randomUUID(), 'FAILED', 9_000_000n);

    expect(await ledgerLiabilities(store.db)).toEqual({
      availableMicro: 42_000_000n,
      heldMicro: 18_000_000n,
      pendingMicro: 0n,
      payableMicro: 10_000_000n,
      lockedMicro: 28_000_000n,
      inFlightMicro: 23_000_000n,
    });
  });

  it('lists the address each network’s payer last signed with, lower-case', async () => {
    expect(await payoutWalletAddresses(store.db)).toEqual([]);
    await store.db
      .insertInto('payout_wallet_state')
      .values({
        chain_id: 8453n,
        payer_address: '0xAbCdEf0123456789abcdef0123456789ABCDEF01',
        next_nonce: 0n,
        lease_owner: null,
        lease_until: null,
        updated_at: at.toISOString(),
      })
      .execute();
    expect(await payoutWalletAddresses(store.db)).toEqual(['0xabcdef0123456789abcdef0123456789abcdef01']);
  });
});
