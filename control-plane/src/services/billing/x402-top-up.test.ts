import { randomBytes, randomUUID } from 'node:crypto';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SettlementReceipt, SignedSettlement, X402Chain } from '../../chain/x402-chain.js';
import { ManualClock } from '../../clock.js';
import { type Eip3009Authorization, type Hex, paymentRequirements } from '../../domain/payments/x402.js';
import { insertAccount } from '../../store/accounts.js';
import { testConfig } from '../../testing/app.js';
import { createTestStore, DIALECTS, type TestStore } from '../../testing/stores.js';
import type { X402Deps } from './x402-deps.js';
import { MINE_POLL_MS, MINE_WAIT_MS, topUp } from './x402-top-up.js';

// The wait inside a fresh top-up's request for its transaction to be mined, on a manual clock: the test advances
// the clock from one poll to the next instead of sleeping. The chain is the X402Chain seam, scripted to mine our
// transaction after a number of receipt reads (test/e2e/x402.test.ts runs the real one against anvil).

const USDC = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913' as Hex;
const TREASURY = `0x${'7'.repeat(40)}` as Hex;
const PAYER = `0x${'5'.repeat(40)}` as Hex;
const BLOCK_HASH = `0x${'b'.repeat(64)}` as Hex;
const AMOUNT = 5_000_000n;

/** Mines the settlement on the `minedAtRead`-th receipt read (never when null); nothing is final yet. */
class ScriptedChain implements X402Chain {
  readonly gasWallet = `0x${'9'.repeat(40)}` as Hex;
  receiptReads = 0;
  readonly broadcasts: Hex[] = [];
  constructor(
    readonly clock: ManualClock,
    readonly minedAtRead: number | null,
  ) {}
  #mined(): boolean {
    return this.minedAtRead !== null && this.receiptReads >= this.minedAtRead;
  }
  async chainId() {
    return 8453;
  }
  async authorizationUsed() {
    return this.#mined();
  }
  async balanceOf() {
    return 10n ** 12n;
  }
  async recoverSigner(_token: Hex, _domain: unknown, authorization: Eip3009Authorization) {
    return authorization.from;
  }
  async simulate() {
    return { ok: true as const };
  }
  async pendingNonce() {
    return 0n;
  }
  async signSettlement(_token: Hex, _a: Eip3009Authorization, _s: Hex, gasNonce: bigint): Promise<SignedSettlement> {
    return { gasWallet: this.gasWallet, gasNonce, rawTx: '0x02', txHash: `0x${randomBytes(32).toString('hex')}` as Hex };
  }
  async broadcast(rawTx: Hex) {
    this.broadcasts.push(rawTx);
  }
  async receipt(): Promise<SettlementReceipt | null> {
    this.receiptReads += 1;
    return this.#mined() ? { success: true, blockNumber: 10n, blockHash: BLOCK_HASH, transferLogIndex: 0 } : null;
  }
  async authorizationUsedBy() {
    return null;
  }
  async latestTimeS() {
    return BigInt(Math.floor(this.clock.now().getTime() / 1000));
  }
  async finalized() {
    return { number: 5n, hash: BLOCK_HASH };
  }
  async blockHashAt() {
    return BLOCK_HASH;
  }
}

describe.each(DIALECTS)('an x402 top-up waiting for its transaction on %s', (dialect) => {
  let store: TestStore;
  let accountId: string;

  beforeAll(async () => {
    store = await createTestStore(dialect);
    const clock = new ManualClock();
    accountId = (
      await insertAccount(store.db, {
        email: `renter-${randomUUID()}@example.test`,
        passwordHash: null,
        name: null,
        role: 'renter',
        emailVerified: true,
        now: clock.now(),
      })
    ).id;
  });
  afterAll(async () => {
    await store.destroy();
  });

  function depsOn(clock: ManualClock, chain: X402Chain): X402Deps {
    const config = testConfig();
    return {
      store,
      clock,
      x402: { ...config.x402, enabled: true, treasury: TREASURY, maxTimeoutS: 300 },
      payments: { ...config.payments, balanceCapMicro: null },
      chain,
      network: { chainId: 8453, name: 'base', usdc: USDC },
      publicBaseUrl: 'http://127.0.0.1:8080',
    };
  }

  /** A well-formed payment for AMOUNT (the scripted chain takes any signature as the payer's). */
  function payment(clock: ManualClock): string {
    const nowS = Math.floor(clock.now().getTime() / 1000);
    const accepted = paymentRequirements({ amountMicro: AMOUNT, usdc: USDC, treasury: TREASURY, maxTimeoutS: 300, checksum: getAddress });
    return encodePaymentSignatureHeader({
      x402Version: 2,
      accepted,
      payload: {
        authorization: {
          from: PAYER,
          to: TREASURY,
          value: AMOUNT.toString(),
          validAfter: '0',
          validBefore: String(nowS + 300),
          nonce: `0x${randomBytes(32).toString('hex')}`,
        },
        signature: `0x${'ab'.repeat(65)}`,
      },
    } as unknown as Parameters<typeof encodePaymentSignatureHeader>[0]);
  }

  /** Runs `work`, moving the clock to each timer it arms until it settles; answers its result and the clock time it took. */
  async function onTheClock<T>(clock: ManualClock, work: Promise<T>): Promise<{ result: T; tookMs: number }> {
    const started = clock.monotonicMs();
    let settled = false;
    const done = work.finally(() => {
      settled = true;
    });
    while (!settled) {
      if (clock.pendingTimers > 0) await clock.advanceToNext();
      else await new Promise((resolve) => setImmediate(resolve));
    }
    return { result: await done, tookMs: clock.monotonicMs() - started };
  }

  it('answers 200 as soon as a poll finds the transaction mined, one poll interval of clock time apart', async () => {
    const clock = new ManualClock();
    // Read 1 right after sending; reads 2, 3 and 4 after one poll interval each: mined at the fourth.
    const chain = new ScriptedChain(clock, 4);
    const header = payment(clock);
    const { result, tookMs } = await onTheClock(clock, topUp(depsOn(clock, chain), { accountId, amountMicro: AMOUNT, payment: header }));
    expect(result).toMatchObject({ status: 200, body: { state: 'PENDING_FINALITY', amount_micro: AMOUNT.toString() } });
    expect(tookMs).toBe(3 * MINE_POLL_MS);
    expect(chain.receiptReads).toBe(4);
    expect(clock.pendingTimers).toBe(0);

    // A repeat of the same payment answers its intent as it stands, without waiting.
    const repeat = await onTheClock(clock, topUp(depsOn(clock, chain), { accountId, amountMicro: AMOUNT, payment: header }));
    expect(repeat.result).toMatchObject({ status: 200, body: { state: 'PENDING_FINALITY' } });
    expect(repeat.tookMs).toBe(0);
  });

  it('answers 202 SETTLING after waiting MINE_WAIT_MS of clock time for a transaction that is not mined', async () => {
    const clock = new ManualClock();
    const chain = new ScriptedChain(clock, null);
    const { result, tookMs } = await onTheClock(
      clock,
      topUp(depsOn(clock, chain), { accountId, amountMicro: AMOUNT, payment: payment(clock) }),
    );
    expect(result).toMatchObject({ status: 202, body: { state: 'SETTLING' } });
    expect(tookMs).toBe(MINE_WAIT_MS);
    // One read after sending, then one per poll interval until the wait is over.
    expect(chain.receiptReads).toBe(1 + MINE_WAIT_MS / MINE_POLL_MS);
    expect(clock.pendingTimers).toBe(0);
  });
});
