import type { Fees, PayoutWallet } from '../../chain/payout-wallet.js';
import type { Hex } from '../../chain/reader.js';
import { iso } from '../../clock.js';
import type { FaultPoint } from '../../faults.js';
import { holdReasons, replacementFees } from '../../domain/withdrawals/holds.js';
import type { Tx } from '../../store/db.js';
import { inTransactionWithRetry, transact } from '../../store/transaction.js';
import {
  acquirePayerLease,
  claimNonce,
  findWithdrawalAddressAnyState,
  hasConfirmedWithdrawal,
  initPayoutWalletState,
  insertWithdrawalTransaction,
  lockPaidRequest,
  type PaidRow,
  payoutWalletState,
  pinnedUnconfirmedMicro,
  releasePayerLease,
  requestedSince,
  moveWithdrawal,
  withdrawalTransactions,
  withdrawalsToWork,
} from '../../store/withdrawals.js';
import { payoutRail, type WithdrawalDeps } from './deps.js';
import { emitWithdrawalStateChanged } from './state-events.js';
import { releaseLock, settleLock } from './unlock.js';
import { leaseOwnerName } from '../../store/leases.js';

/** Requests taken per state per step. */
const BATCH = 25;
const DAY_MS = 86_400_000;

export interface PayerEvents {
  /** The wallet lacks USDC or gas for the next request (true), or has enough again (false). */
  lowFunds?(low: boolean, detail: { needMicro: bigint; haveMicro: bigint; nativeWei: bigint }): void;
  warn?(obj: object, message: string): void;
  info?(obj: object, message: string): void;
  /** A named fault point was reached: the test facility of faults.ts (nothing happens unless a test asked). */
  fault?(point: FaultPoint): void;
}

export interface PayerStepResult {
  leader: boolean;
  held: number;
  signed: number;
  broadcast: number;
  confirmed: number;
  failed: number;
  replaced: number;
  lowFunds: boolean;
}

/**
 * The payer of the primary network: takes each INTENT request through every correctness check and the holds, then
 * pins a nonce and stores the signed transfer in one transaction before broadcasting it; sends SIGNED bytes (again,
 * after a restart); replaces a stuck transaction at the same nonce with a higher fee; confirms a transfer once its
 * block is final (lock -> external) or fails it if it reverted (lock released). One replica at a time (the lease).
 */
export class Payer {
  readonly owner: string;
  readonly #deps: WithdrawalDeps;
  readonly #wallet: PayoutWallet;
  readonly #events: PayerEvents;
  readonly #leaseMs: number;
  #chainChecked = false;

  constructor(deps: WithdrawalDeps, wallet: PayoutWallet, options: { owner?: string; events?: PayerEvents } = {}) {
    this.#deps = deps;
    this.#wallet = wallet;
    this.owner = options.owner ?? leaseOwnerName();
    this.#events = options.events ?? {};
    this.#leaseMs = Math.min(120_000, Math.max(10_000, 10 * deps.payouts.pollIntervalMs));
  }

  get address(): Hex {
    return this.#wallet.address;
  }

  async step(): Promise<PayerStepResult> {
    const result: PayerStepResult = {
      leader: false,
      held: 0,
      signed: 0,
      broadcast: 0,
      confirmed: 0,
      failed: 0,
      replaced: 0,
      lowFunds: false,
    };
    const rail = payoutRail(this.#deps);
    if (rail === null) return result;
    const chainId = rail.network.chainId;
    if (!this.#chainChecked) {
      const actual = await this.#wallet.chainId();
      if (actual !== chainId) throw new Error(`payout wallet: the RPC node serves chain ${actual}, not ${chainId}`);
      this.#chainChecked = true;
    }
    const { store } = this.#deps;
    await initPayoutWalletState(store.db, { chainId, payerAddress: this.#wallet.address, at: iso(this.#now()) });
    if (!(await acquirePayerLease(store.db, chainId, this.owner, this.#now(), this.#leaseMs))) return result;
    result.leader = true;

    // Sent or stored first: what is already pinned goes out before anything new is signed.
    for (const row of await withdrawalsToWork(store.db, chainId, ['BROADCAST'], BATCH)) await this.#follow(row, result);
    for (const row of await withdrawalsToWork(store.db, chainId, ['SIGNED'], BATCH)) await this.#send(row, result);
    for (const row of await withdrawalsToWork(store.db, chainId, ['INTENT'], BATCH)) {
      if (!(await this.#check(row, result))) continue;
      if (!(await this.#fundsFor(row, chainId, result))) break;
      await this.#pin(row, chainId, result);
    }
    return result;
  }

  /** Gives the lease up (a replica shutting down). */
  async stop(): Promise<void> {
    const rail = payoutRail(this.#deps);
    if (rail) await releasePayerLease(this.#deps.store.db, rail.network.chainId, this.owner);
  }

  /** Correctness checks and holds; true when the request may be paid now (it stays INTENT until pinned). */
  async #check(row: PaidRow, result: PayerStepResult): Promise<boolean> {
    const { payouts } = this.#deps;
    const now = this.#now();
    return inTransactionWithRetry(this.#deps.store, async (trx) => {
      const current = await lockPaidRequest(trx, row.id);
      if (current?.state !== 'INTENT') return false;
      // A refund goes to the deposit's sender, fixed by the operator who decided it: no address book, no holds.
      if (current.kind === 'refund') return true;
      const address = await findWithdrawalAddressAnyState(trx, current.withdrawal_address_id);
      const reasons = holdReasons(payouts, {
        amountMicro: current.amount_micro,
        address: address && address.removed_at === null ? { version: address.version, createdAt: new Date(address.created_at) } : null,
        requestedVersion: current.address_version,
        lastDayMicro: await requestedSince(trx, current.account_id, iso(new Date(now.getTime() - DAY_MS))),
        paidBefore: await hasConfirmedWithdrawal(trx, current.account_id),
        approved: current.approved === 1n,
        now,
      });
      if (reasons.length === 0) return true;
      await moveWithdrawal(trx, current, 'INTENT', 'UNSIGNED', { hold_reasons: JSON.stringify(reasons), updated_at: iso(now) });
      await emitWithdrawalStateChanged(trx, current, { from: 'INTENT', to: 'UNSIGNED', txHash: null }, now);
      result.held++;
      return false;
    });
  }

  /** Enough USDC for every pinned transfer plus this one, and gas; otherwise the request waits and the alert fires. */
  async #fundsFor(row: PaidRow, chainId: number, result: PayerStepResult): Promise<boolean> {
    const [haveMicro, nativeWei, pinned] = await Promise.all([
      this.#wallet.tokenBalance(row.token_address as Hex),
      this.#wallet.nativeBalance(),
      pinnedUnconfirmedMicro(this.#deps.store.db, chainId),
    ]);
    const needMicro = pinned + row.amount_micro;
    const low = haveMicro < needMicro || nativeWei < this.#deps.payouts.minNativeWei;
    result.lowFunds = low;
    this.#events.lowFunds?.(low, { needMicro, haveMicro, nativeWei });
    return !low;
  }

  /** Pins the next nonce and stores the signed transfer in one transaction; nothing is sent before it commits. */
  async #pin(row: PaidRow, chainId: number, result: PayerStepResult): Promise<void> {
    const state = await payoutWalletState(this.#deps.store.db, chainId);
    if (!state) return;
    const sameWallet = state.payer_address === this.#wallet.address;
    const stored = sameWallet ? state.next_nonce : 0n;
    const chainNonce = await this.#wallet.pendingNonce();
    const nonce = stored > chainNonce ? stored : chainNonce;
    const fees = await this.#wallet.fees();
    const signed = await this.#sign(row, nonce, fees);
    const now = this.#now();
    const pinned = await transact(this.#deps.store, async (trx) => {
      const claimed = await claimNonce(trx, {
        chainId,
        owner: this.owner,
        payerAddress: this.#wallet.address,
        expectedNext: state.next_nonce,
        nonce,
        now,
      });
      if (!claimed) return false;
      const moved = await moveWithdrawal(trx, row, 'INTENT', 'SIGNED', {
        payer_address: this.#wallet.address,
        nonce,
        raw_tx: signed.raw,
        tx_hash: signed.hash,
        max_fee_per_gas: fees.maxFeePerGas.toString(),
        max_priority_fee_per_gas: fees.maxPriorityFeePerGas.toString(),
        signed_at: iso(now),
        updated_at: iso(now),
      });
      // Reviewed or changed meanwhile: nothing is pinned (the nonce claim rolls back with it).
      if (!moved) throw new NotPinned();
      await this.#recordTransaction(trx, row.id, signed, fees, now);
      await emitWithdrawalStateChanged(trx, row, { from: 'INTENT', to: 'SIGNED', txHash: signed.hash }, now);
      return true;
    }).catch((error: unknown) => {
      if (error instanceof NotPinned) return false;
      throw error;
    });
    if (!pinned) return;
    result.signed++;
    this.#events.info?.({ withdrawal: row.id, nonce: nonce.toString(), tx_hash: signed.hash }, 'withdrawal signed');
    this.#events.fault?.('payout.pinned');
    await this.#send({ ...row, state: 'SIGNED', raw_tx: signed.raw, tx_hash: signed.hash }, result);
  }

  /** Sends the stored bytes (the same ones after any restart) and records the broadcast. */
  async #send(row: PaidRow, result: PayerStepResult): Promise<void> {
    if (row.raw_tx === null) return;
    await this.#wallet.broadcast(row.raw_tx as Hex);
    this.#events.fault?.('payout.broadcast');
    const now = this.#now();
    const moved = await transact(this.#deps.store, async (trx) => {
      if (!(await moveWithdrawal(trx, row, 'SIGNED', 'BROADCAST', { broadcast_at: iso(now), updated_at: iso(now) }))) return false;
      await emitWithdrawalStateChanged(trx, row, { from: 'SIGNED', to: 'BROADCAST', txHash: row.tx_hash }, now);
      return true;
    });
    if (moved) result.broadcast++;
  }

  /** A sent request: final receipt -> CONFIRMED (or FAILED if it reverted); none for too long -> replacement. */
  async #follow(row: PaidRow, result: PayerStepResult): Promise<void> {
    const transactions = await withdrawalTransactions(this.#deps.store.db, row.id);
    const finalized = await this.#wallet.finalizedBlock();
    for (const tx of transactions) {
      const receipt = await this.#wallet.receipt(tx.tx_hash as Hex);
      if (receipt === null) continue;
      // Mined: one of the request's transactions holds the nonce. Wait for finality before moving money.
      if (receipt.blockNumber > finalized) return;
      const now = this.#now();
      await transact(this.#deps.store, async (trx) => {
        const current = await lockPaidRequest(trx, row.id);
        if (current?.state !== 'BROADCAST') return;
        const done = {
          tx_hash: tx.tx_hash,
          raw_tx: tx.raw_tx,
          block_number: receipt.blockNumber,
          fee_wei: receipt.feeWei.toString(),
          updated_at: iso(now),
        };
        if (receipt.success) {
          await moveWithdrawal(trx, current, 'BROADCAST', 'CONFIRMED', { ...done, confirmed_at: iso(now) });
          await settleLock(trx, current, now);
          result.confirmed++;
        } else {
          await moveWithdrawal(trx, current, 'BROADCAST', 'FAILED', { ...done, failure_reason: 'reverted_on_chain' });
          await releaseLock(trx, current, now);
          result.failed++;
        }
        const to = receipt.success ? 'CONFIRMED' : 'FAILED';
        await emitWithdrawalStateChanged(trx, current, { from: 'BROADCAST', to, txHash: tx.tx_hash }, now);
      });
      this.#events.info?.({ withdrawal: row.id, tx_hash: tx.tx_hash, success: receipt.success }, 'withdrawal final');
      return;
    }
    const sentAt = row.broadcast_at ? new Date(row.broadcast_at).getTime() : 0;
    if (this.#now().getTime() - sentAt >= this.#deps.payouts.replaceAfterMs) {
      await this.#replace(row, result);
      return;
    }
    // Not mined yet: the node may have dropped it (a restart, a full mempool); the same bytes again cost nothing.
    await this.#wallet.broadcast(row.raw_tx as Hex);
  }

  /** The same transfer at the same nonce with a higher fee, stored before it is sent. */
  async #replace(row: PaidRow, result: PayerStepResult): Promise<void> {
    if (row.nonce === null || row.max_fee_per_gas === null || row.max_priority_fee_per_gas === null) return;
    const fees = replacementFees(
      { maxFeePerGas: BigInt(row.max_fee_per_gas), maxPriorityFeePerGas: BigInt(row.max_priority_fee_per_gas) },
      await this.#wallet.fees(),
    );
    const signed = await this.#sign(row, row.nonce, fees);
    const now = this.#now();
    const stored = await transact(this.#deps.store, async (trx) => {
      const current = await lockPaidRequest(trx, row.id);
      if (current?.state !== 'BROADCAST' || current.tx_hash !== row.tx_hash) return false;
      // Replaced at the same nonce: the request stays BROADCAST.
      await moveWithdrawal(trx, current, 'BROADCAST', 'BROADCAST', {
        raw_tx: signed.raw,
        tx_hash: signed.hash,
        max_fee_per_gas: fees.maxFeePerGas.toString(),
        max_priority_fee_per_gas: fees.maxPriorityFeePerGas.toString(),
        broadcast_at: iso(now),
        updated_at: iso(now),
      });
      await this.#recordTransaction(trx, row.id, signed, fees, now);
      return true;
    });
    if (!stored) return;
    result.replaced++;
    this.#events.warn?.(
      { withdrawal: row.id, nonce: row.nonce.toString(), tx_hash: signed.hash },
      'stuck withdrawal replaced at the same nonce',
    );
    await this.#wallet.broadcast(signed.raw);
  }

  #sign(row: PaidRow, nonce: bigint, fees: Fees) {
    return this.#wallet.signTransfer({
      chainId: Number(row.chain_id),
      token: row.token_address as Hex,
      to: row.address as Hex,
      amount: row.amount_micro,
      nonce,
      gas: this.#deps.payouts.gasLimit,
      fees,
    });
  }

  async #recordTransaction(trx: Tx, withdrawalId: string, signed: { raw: Hex; hash: Hex }, fees: Fees, now: Date): Promise<void> {
    await insertWithdrawalTransaction(trx, {
      tx_hash: signed.hash,
      withdrawal_id: withdrawalId,
      raw_tx: signed.raw,
      max_fee_per_gas: fees.maxFeePerGas.toString(),
      created_at: iso(now),
    });
  }

  #now(): Date {
    return this.#deps.clock.now();
  }
}

class NotPinned extends Error {}
