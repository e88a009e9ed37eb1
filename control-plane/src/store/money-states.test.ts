import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForbiddenStateMove } from '../domain/moves.js';
import type { DepositState } from '../domain/payments/deposits.js';
import type { X402IntentState } from '../domain/payments/x402.js';
import type { PaidKind, WithdrawalState } from '../domain/withdrawals/states.js';
import { recordSeen, seenUsdcDeposit } from '../testing/deposits.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import type { Tx } from './db.js';
import { finishDeposit, finishRefund, markRefunding, moveDeposit } from './deposits.js';
import { insertWithdrawal, moveWithdrawal, NOT_YET_PAID, type PaidRow } from './withdrawals.js';
import { insertIntent, moveIntent, storeSignedSettlement } from './x402.js';

// The money aggregates' state writes, on both dialects: a move its table forbids throws ForbiddenStateMove and leaves
// the row exactly as it was; an allowed move is a compare-and-set on the state it leaves, so of two writers moving the
// same row from the same state exactly one wins. (The tables themselves are walked pair by pair in the domain's tests.)

const at = new Date('2026-11-27T12:00:00.000Z');
const later = new Date('2026-11-27T12:05:00.000Z');

describe.each(DIALECTS)('money state writes on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store?.destroy();
  });

  const inTx = <T>(work: (trx: Tx) => Promise<T>): Promise<T> => store.db.transaction().execute(work);

  describe('withdrawals, payouts and refunds', () => {
    const paidRow = (kind: PaidKind, state: WithdrawalState): PaidRow => ({
      id: randomUUID(),
      account_id: randomUUID(),
      kind,
      state,
      amount_micro: 5_000_000n,
      network: 'base',
      chain_id: 8453n,
      token_address: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
      withdrawal_address_id: randomUUID(),
      address: `0x${'1'.repeat(40)}`,
      address_version: 1n,
      hold_reasons: '[]',
      approved: 0n,
      reviewed_by: null,
      reviewed_at: null,
      review_reason: null,
      ...NOT_YET_PAID,
      created_at: at.toISOString(),
      updated_at: at.toISOString(),
    });
    /** A request stored as INTENT, then put in `state` as a fixture (straight to the table, past the checked path). */
    const request = async (kind: PaidKind, state: WithdrawalState) => {
      const row = paidRow(kind, 'INTENT');
      await inTx((trx) => insertWithdrawal(trx, row));
      if (state !== 'INTENT') await store.db.updateTable('withdrawals').set({ state }).where('id', '=', row.id).execute();
      return row.id;
    };
    const read = (id: string) => store.db.selectFrom('withdrawals').selectAll().where('id', '=', id).executeTakeFirst();

    it('refuses a move the table forbids and leaves the request as it was', async () => {
      for (const [kind, from, to] of [
        ['withdrawal', 'CONFIRMED', 'INTENT'],
        ['payout', 'FAILED', 'BROADCAST'],
        ['withdrawal', 'SIGNED', 'FAILED'],
        ['payout', 'UNSIGNED', 'SIGNED'],
        ['refund', 'INTENT', 'UNSIGNED'],
        ['refund', 'INTENT', 'FAILED'],
      ] as const) {
        const id = await request(kind, from);
        const before = await read(id);
        await expect(
          inTx((trx) => moveWithdrawal(trx, { id, kind }, from, to, { updated_at: later.toISOString(), failure_reason: 'x' })),
        ).rejects.toThrow(ForbiddenStateMove);
        expect(await read(id)).toEqual(before);
      }
    });

    it('refuses to store a new request in any state but INTENT: nothing is written', async () => {
      const row = paidRow('withdrawal', 'CONFIRMED');
      await expect(inTx((trx) => insertWithdrawal(trx, row))).rejects.toThrow(ForbiddenStateMove);
      expect(await read(row.id)).toBeUndefined();
    });

    it('moves by compare-and-set: of two writers from INTENT exactly one wins, and a stale one changes nothing', async () => {
      const id = await request('payout', 'INTENT');
      const sign = (nonce: bigint) =>
        inTx((trx) =>
          moveWithdrawal(trx, { id, kind: 'payout' }, 'INTENT', 'SIGNED', {
            nonce,
            signed_at: later.toISOString(),
            updated_at: later.toISOString(),
          }),
        );
      const outcomes = await Promise.all([sign(7n), sign(8n)]);
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      const after = await read(id);
      expect(after?.state).toBe('SIGNED');
      expect(after?.nonce).toBe(outcomes[0] ? 7n : 8n);
      // The table allows INTENT -> FAILED for a payout, but it is not INTENT any more.
      expect(await inTx((trx) => moveWithdrawal(trx, { id, kind: 'payout' }, 'INTENT', 'FAILED', { updated_at: at.toISOString() }))).toBe(
        false,
      );
      expect(await read(id)).toEqual(after);
    });

    it('moves only the kind it names: a refund is not moved as a payout', async () => {
      const id = await request('refund', 'UNSIGNED');
      const before = await read(id);
      expect(
        await inTx((trx) => moveWithdrawal(trx, { id, kind: 'payout' }, 'UNSIGNED', 'INTENT', { updated_at: later.toISOString() })),
      ).toBe(false);
      expect(await read(id)).toEqual(before);
    });
  });

  describe('deposits', () => {
    /** A deposit recorded SEEN, then put in `state` as a fixture (straight to the table, past the checked path). */
    const deposit = async (state: DepositState) => {
      const id = await recordSeen(store, seenUsdcDeposit(randomUUID(), 7_000_000n), at);
      const refund = state === 'REFUNDING' || state === 'REFUNDED' ? randomUUID() : null;
      if (state !== 'SEEN') await store.db.updateTable('chain_deposits').set({ state, refund_id: refund }).where('id', '=', id).execute();
      return { id, refund };
    };
    const read = (id: string) => store.db.selectFrom('chain_deposits').selectAll().where('id', '=', id).executeTakeFirst();
    const final = { amountMicro: 7_000_000n, reason: null, price: null, postingId: null, at: later };

    it('refuses a move the table forbids and leaves the deposit as it was', async () => {
      for (const [from, to] of [
        ['CREDITED', 'HELD'],
        ['REFUNDED', 'CREDITED'],
        ['SEEN', 'REFUNDING'],
        ['HELD', 'BELOW_MINIMUM'],
        ['BELOW_MINIMUM', 'SEEN'],
        ['REFUNDING', 'CREDITED'],
      ] as const) {
        const { id } = await deposit(from);
        const before = await read(id);
        await expect(inTx((trx) => finishDeposit(trx, id, from, to, final))).rejects.toThrow(ForbiddenStateMove);
        await expect(inTx((trx) => moveDeposit(trx, { id }, from, to, { reason: 'x' }))).rejects.toThrow(ForbiddenStateMove);
        expect(await read(id)).toEqual(before);
      }
    });

    it('moves by compare-and-set: of two credits from HELD exactly one wins, and a refund after it changes nothing', async () => {
      const { id } = await deposit('HELD');
      const credit = (postingId: string) => inTx((trx) => finishDeposit(trx, id, 'HELD', 'CREDITED', { ...final, postingId }));
      const outcomes = await Promise.all([credit('posting-a'), credit('posting-b')]);
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      const after = await read(id);
      expect(after?.state).toBe('CREDITED');
      expect(after?.posting_id).toBe(outcomes[0] ? 'posting-a' : 'posting-b');
      const refunding = { id, refundId: randomUUID(), postingId: 'lock', by: 'admin', reason: 'r', at: later };
      expect(await inTx((trx) => markRefunding(trx, refunding))).toBe(false);
      expect(await read(id)).toEqual(after);
    });

    it('ends a refund only from REFUNDING, through the table: REFUNDED once, then it throws and nothing moves', async () => {
      const { id, refund } = await deposit('REFUNDING');
      await inTx((trx) => finishRefund(trx, refund!, 'REFUNDED'));
      const after = await read(id);
      expect(after?.state).toBe('REFUNDED');
      await expect(inTx((trx) => finishRefund(trx, refund!, 'HELD'))).rejects.toThrow(/no REFUNDING deposit/);
      expect(await read(id)).toEqual(after);
    });
  });

  describe('x402 intents', () => {
    /** An intent stored VERIFIED, then put in `state` as a fixture (straight to the table, past the checked path). */
    const intent = async (state: X402IntentState) => {
      const id = randomUUID();
      const stored = await insertIntent(store.db, {
        id,
        accountId: randomUUID(),
        chainId: 8453,
        network: 'base',
        token: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
        payer: `0x${'2'.repeat(40)}`,
        nonce: `0x${randomBytes(32).toString('hex')}`,
        payTo: `0x${'3'.repeat(40)}`,
        amountMicro: 5_000_000n,
        validAfter: 0n,
        validBefore: 2_000_000_000n,
        signature: `0x${'4'.repeat(130)}`,
        at,
      });
      expect(stored).toBe(true);
      if (state !== 'VERIFIED') await store.db.updateTable('x402_intents').set({ state }).where('id', '=', id).execute();
      return id;
    };
    const read = (id: string) => store.db.selectFrom('x402_intents').selectAll().where('id', '=', id).executeTakeFirst();

    it('refuses a move the table forbids and leaves the intent as it was', async () => {
      for (const [from, to] of [
        ['VERIFIED', 'CONFIRMED'],
        ['SETTLING', 'CONFIRMED'],
        ['CONFIRMED', 'SETTLING'],
        ['EXCEPTION', 'PENDING_FINALITY'],
        ['REFUSED', 'VERIFIED'],
        ['PENDING_FINALITY', 'EXCEPTION'],
      ] as const) {
        const id = await intent(from);
        const before = await read(id);
        await expect(moveIntent(store.db, id, from, to, { credited_micro: 5_000_000n, posting_id: 'p' }, later)).rejects.toThrow(
          ForbiddenStateMove,
        );
        expect(await read(id)).toEqual(before);
      }
    });

    it('moves by compare-and-set: of two writers from SETTLING exactly one wins, and a stale one changes nothing', async () => {
      const id = await intent('VERIFIED');
      const signed = { gasWallet: `0x${'5'.repeat(40)}`, gasNonce: 1n, rawTx: '0x01', txHash: `0x${'6'.repeat(64)}` };
      expect(await storeSignedSettlement(store.db, id, signed, at)).toBe('stored');
      expect(await storeSignedSettlement(store.db, id, signed, at)).toBe('moved');
      const mined = (block: bigint) =>
        moveIntent(
          store.db,
          id,
          'SETTLING',
          'PENDING_FINALITY',
          { block_number: block, block_hash: `0x${'7'.repeat(64)}`, log_index: 0n },
          later,
        );
      const outcomes = await Promise.all([mined(10n), mined(11n)]);
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      const after = await read(id);
      expect(after?.state).toBe('PENDING_FINALITY');
      expect(after?.block_number).toBe(outcomes[0] ? 10n : 11n);
      expect(await moveIntent(store.db, id, 'SETTLING', 'EXCEPTION', { reason: 'late' }, later)).toBe(false);
      expect(await read(id)).toEqual(after);
    });
  });
});
