import type { BlockRef, ChainReader, Hex, NativeTransfer, TokenTransfer } from '../../chain/reader.js';
import { nativeToMicro, priceRefusal, stablecoinToMicro } from '../../domain/payments/amounts.js';
import type { ChainNetwork } from '../../domain/payments/chains.js';
import { NATIVE_LOG_INDEX } from '../../domain/payments/deposits.js';
import { finalityStalled, nextRange, rewindTo } from '../../domain/payments/scanning.js';
import {
  acquireLease,
  depositAddressesAfter,
  dropSeenAbove,
  dropSeenDeposit,
  initWatchState,
  moveCursor,
  noteSeenDeposit,
  recordHeads,
  releaseLease,
  type SeenDeposit,
  seenDepositsUpTo,
  upsertSeenDeposits,
  watchState,
} from '../../store/deposits.js';
import { inTransactionWithRetry } from '../../store/transaction.js';
import { releaseHeldDeposits, settleFinalDeposit } from './deposit-credit.js';
import type { DepositDeps } from './deposit-deps.js';
import { leaseOwnerName } from '../../store/leases.js';

/** Addresses per Transfer-log query: the `to` topic is an OR list, and nodes bound its length. */
const ADDRESSES_PER_LOG_QUERY = 200;
/** Deposit addresses loaded from the store per read (the watcher keeps them in memory, loading new ones each step). */
const ADDRESS_LOAD_BATCH = 10_000;
/** Final deposits decided per batch, and how long one step may keep scanning or settling before it yields. */
const SETTLE_BATCH = 500;
const STEP_BUDGET_MS = 5_000;

export interface ChainWatchEvents {
  /** The network's lag and finality health after a step (gauges). */
  heads?(input: { network: string; head: bigint; finalized: bigint; cursor: bigint; stalled: boolean }): void;
  warn?(obj: object, message: string): void;
  info?(obj: object, message: string): void;
}

export interface ChainWatchOptions {
  network: ChainNetwork;
  reader: ChainReader;
  /** This replica's name in the lease row (one per process). */
  owner?: string;
  events?: ChainWatchEvents;
}

export interface ChainWatchStepResult {
  /** False when another replica holds this network's lease (this one did nothing). */
  leader: boolean;
  scannedBlocks: number;
  seen: number;
  credited: number;
  held: number;
  belowMinimum: number;
  released: number;
  reorgs: number;
}

/**
 * One network's deposit watcher: a step takes (or renews) the network's lease, checks the cursor block is still
 * canonical (a reorg rewinds and drops what was only SEEN), reads new blocks in bounded contiguous ranges (Transfer
 * logs to known addresses, and plain native transfers), records deposits as SEEN together with the cursor, then
 * settles SEEN deposits at or below `finalized` whose block is still canonical, and releases HELD deposits that fit.
 */
export class ChainWatcher {
  readonly network: ChainNetwork;
  readonly owner: string;
  readonly #deps: DepositDeps;
  readonly #reader: ChainReader;
  readonly #events: ChainWatchEvents;
  readonly #leaseMs: number;
  readonly #addressToAccount = new Map<string, string>();
  #addresses: Hex[] = [];
  #lastIndex = -1n;
  #chainChecked = false;
  #stalled = false;

  constructor(deps: DepositDeps, options: ChainWatchOptions) {
    this.#deps = deps;
    this.network = options.network;
    this.#reader = options.reader;
    this.owner = options.owner ?? leaseOwnerName();
    this.#events = options.events ?? {};
    // Long enough to cover a slow step; short enough that a dead replica's network is taken over soon.
    this.#leaseMs = Math.min(60_000, Math.max(5_000, 10 * deps.payments.chainPollIntervalMs));
  }

  async step(): Promise<ChainWatchStepResult> {
    const result: ChainWatchStepResult = {
      leader: false,
      scannedBlocks: 0,
      seen: 0,
      credited: 0,
      held: 0,
      belowMinimum: 0,
      released: 0,
      reorgs: 0,
    };
    const started = Date.now();
    const { store } = this.#deps;
    const chainId = this.network.chainId;
    if (!this.#chainChecked) {
      const actual = await this.#reader.chainId();
      if (actual !== chainId) throw new Error(`${this.network.name}: the RPC node serves chain ${actual}, not ${chainId}`);
      this.#chainChecked = true;
    }
    const { latest, finalized } = await this.#reader.heads();
    await initWatchState(store.db, {
      chainId,
      network: this.network.name,
      cursorBlock: finalized.number,
      cursorHash: finalized.hash,
      at: this.#now(),
    });
    if (!(await acquireLease(store.db, chainId, this.owner, this.#now(), this.#leaseMs))) return result;
    result.leader = true;

    const state = await recordHeads(store.db, {
      chainId,
      owner: this.owner,
      head: latest.number,
      finalized: finalized.number,
      now: this.#now(),
    });
    if (!state) return result;
    this.#reportFinality(state.finalized_advanced_at, latest.number, finalized.number, state.cursor_block);

    // A reorg below the cursor changes the cursor block's hash (or removes it): rewind and rescan.
    let cursor = state.cursor_block;
    let cursorHash = state.cursor_hash as Hex;
    const canonical = await this.#reader.blockAt(cursor);
    if (canonical === null || canonical.hash !== cursorHash) {
      const rewound = await this.#rewind(cursor, finalized);
      cursor = rewound.number;
      cursorHash = rewound.hash;
      result.reorgs++;
    }

    await this.#loadNewAddresses();
    while (Date.now() - started < STEP_BUDGET_MS) {
      const range = nextRange(cursor, latest.number, this.#deps.payments.chainMaxBlocks);
      if (!range) break;
      if (!(await acquireLease(store.db, chainId, this.owner, this.#now(), this.#leaseMs))) return result;
      const read = await this.#readRange(range.from, range.to, cursorHash);
      if (read === 'reorg') {
        const rewound = await this.#rewind(cursor, finalized);
        cursor = rewound.number;
        cursorHash = rewound.hash;
        result.reorgs++;
        break;
      }
      const expected = cursor;
      await inTransactionWithRetry(store, async (trx) => {
        await upsertSeenDeposits(trx, read.deposits, this.#now());
        await moveCursor(trx, {
          chainId,
          owner: this.owner,
          expectedBlock: expected,
          block: range.to,
          hash: read.tip.hash,
          now: this.#now(),
        });
      });
      cursor = range.to;
      cursorHash = read.tip.hash;
      result.scannedBlocks += Number(range.to - range.from + 1n);
      result.seen += read.deposits.length;
    }

    await this.#settle(finalized, result, started);
    result.released = await releaseHeldDeposits(this.#deps);
    this.#events.heads?.({ network: this.network.name, head: latest.number, finalized: finalized.number, cursor, stalled: this.#stalled });
    return result;
  }

  /** Gives the lease up so another replica takes over at once (a clean shutdown). */
  async stop(): Promise<void> {
    await releaseLease(this.#deps.store.db, this.network.chainId, this.owner);
  }

  #now(): Date {
    return this.#deps.clock.now();
  }

  async #loadNewAddresses(): Promise<void> {
    for (;;) {
      const batch = await depositAddressesAfter(this.#deps.store.db, this.#lastIndex, ADDRESS_LOAD_BATCH);
      for (const a of batch) {
        this.#addressToAccount.set(a.address, a.accountId);
        this.#addresses.push(a.address as Hex);
        this.#lastIndex = a.index;
      }
      if (batch.length < ADDRESS_LOAD_BATCH) return;
    }
  }

  /**
   * Reads one range so that everything in it comes from one chain: for a network with a native coin every block is
   * read and linked by parent hash from the cursor block; Transfer logs must name the blocks read (or, without a
   * native coin, blocks still canonical after the read). Anything else is a reorg under our feet.
   */
  async #readRange(from: bigint, to: bigint, cursorHash: Hex): Promise<{ deposits: SeenDeposit[]; tip: BlockRef } | 'reorg'> {
    const deposits: SeenDeposit[] = [];
    let tip: BlockRef | null = null;
    let hashes: Map<bigint, Hex> | null = null;
    if (this.network.native) {
      const scan = await this.#reader.nativeTransfers({ to: this.#addressToAccount, fromBlock: from, toBlock: to });
      let parent = cursorHash;
      hashes = new Map();
      for (const block of scan.blocks) {
        if (block.parentHash !== parent) return 'reorg';
        parent = block.hash;
        hashes.set(block.number, block.hash);
      }
      tip = scan.blocks[scan.blocks.length - 1] ?? null;
      if (!tip || tip.number !== to) throw new Error(`${this.network.name}: block scan of ${from}..${to} came back short`);
      for (const t of scan.transfers) deposits.push(this.#nativeDeposit(t));
    } else {
      // The range's last block first: if the chain moves while the logs are read, the next step sees the cursor's hash change.
      tip = await this.#reader.blockAt(to);
      if (!tip) return 'reorg';
      const first = from === to ? tip : await this.#reader.blockAt(from);
      if (!first || first.parentHash !== cursorHash) return 'reorg';
    }
    const tokens = this.network.assets.map((a) => a.address);
    const transfers: TokenTransfer[] = [];
    for (let i = 0; i < this.#addresses.length; i += ADDRESSES_PER_LOG_QUERY) {
      transfers.push(
        ...(await this.#reader.tokenTransfers({
          tokens,
          to: this.#addresses.slice(i, i + ADDRESSES_PER_LOG_QUERY),
          fromBlock: from,
          toBlock: to,
        })),
      );
    }
    const checked = new Map<bigint, Hex | null>(hashes ?? []);
    for (const t of transfers) {
      if (!checked.has(t.blockNumber)) checked.set(t.blockNumber, (await this.#reader.blockAt(t.blockNumber))?.hash ?? null);
      if (checked.get(t.blockNumber) !== t.blockHash) return 'reorg';
      const deposit = this.#tokenDeposit(t);
      if (deposit) deposits.push(deposit);
    }
    if (!this.network.native) {
      const after = await this.#reader.blockAt(to);
      if (!after || after.hash !== tip.hash) return 'reorg';
    }
    return { deposits, tip };
  }

  #tokenDeposit(t: TokenTransfer): SeenDeposit | null {
    const accountId = this.#addressToAccount.get(t.to);
    const asset = this.network.assets.find((a) => a.address === t.token);
    if (!accountId || !asset || t.value === 0n) return null;
    return {
      chainId: this.network.chainId,
      network: this.network.name,
      txHash: t.txHash,
      logIndex: t.logIndex,
      accountId,
      address: t.to,
      asset: asset.symbol,
      tokenAddress: asset.address,
      amountRaw: t.value,
      decimals: asset.decimals,
      amountMicro: stablecoinToMicro(t.value, asset.decimals),
      blockNumber: t.blockNumber,
      blockHash: t.blockHash,
      fromAddress: t.from,
    };
  }

  #nativeDeposit(t: NativeTransfer): SeenDeposit {
    const native = this.network.native;
    const accountId = this.#addressToAccount.get(t.to);
    if (!native || !accountId) throw new Error('a native transfer to an unknown address');
    return {
      chainId: this.network.chainId,
      network: this.network.name,
      txHash: t.txHash,
      logIndex: NATIVE_LOG_INDEX,
      accountId,
      address: t.to,
      asset: native.symbol,
      tokenAddress: null,
      amountRaw: t.value,
      decimals: native.decimals,
      amountMicro: null,
      blockNumber: t.blockNumber,
      blockHash: t.blockHash,
      fromAddress: t.from,
    };
  }

  /** Rewinds to the finalized block (it cannot change) or below, dropping what was only SEEN above it. */
  async #rewind(cursor: bigint, finalized: BlockRef): Promise<{ number: bigint; hash: Hex }> {
    let target = rewindTo(cursor, finalized.number);
    // The cursor itself is final but was read on a branch that lost: go back a whole range to be sure.
    if (target === cursor)
      target = cursor > BigInt(this.#deps.payments.chainMaxBlocks) ? cursor - BigInt(this.#deps.payments.chainMaxBlocks) : 0n;
    const block = target === finalized.number ? finalized : await this.#reader.blockAt(target);
    if (!block) throw new Error(`${this.network.name}: block ${target} is missing while rewinding`);
    const chainId = this.network.chainId;
    let dropped = 0;
    await inTransactionWithRetry(this.#deps.store, async (trx) => {
      dropped = await dropSeenAbove(trx, chainId, target);
      await moveCursor(trx, { chainId, owner: this.owner, expectedBlock: cursor, block: target, hash: block.hash, now: this.#now() });
    });
    this.#events.warn?.(
      { network: this.network.name, from_block: cursor.toString(), to_block: target.toString(), dropped },
      'chain reorg: rescanning',
    );
    return { number: target, hash: block.hash };
  }

  /** SEEN deposits at or below finalized: still canonical, they are decided; on a lost branch, dropped. */
  async #settle(finalized: BlockRef, result: ChainWatchStepResult, started: number): Promise<void> {
    const chainId = this.network.chainId;
    let price: { answer: bigint; decimals: number } | null | 'refused' = null;
    const canonical = new Map<bigint, Hex | null>([[finalized.number, finalized.hash]]);
    while (Date.now() - started < 2 * STEP_BUDGET_MS) {
      const seen = await seenDepositsUpTo(this.#deps.store.db, chainId, finalized.number, SETTLE_BATCH);
      if (seen.length === 0) return;
      let progressed = false;
      for (const row of seen) {
        if (!canonical.has(row.block_number)) canonical.set(row.block_number, (await this.#reader.blockAt(row.block_number))?.hash ?? null);
        if (canonical.get(row.block_number) !== row.block_hash) {
          if (await dropSeenDeposit(this.#deps.store.db, row.id)) {
            this.#events.warn?.(
              { network: this.network.name, tx_hash: row.tx_hash, block: row.block_number.toString() },
              'deposit dropped: its block is no longer canonical',
            );
          }
          progressed = true;
          continue;
        }
        let amountMicro = row.amount_micro;
        let evidence: { answer: bigint; decimals: number } | null = null;
        if (row.token_address === null) {
          const native = this.network.native;
          if (!native) continue;
          if (price === null) price = await this.#priceAt(finalized);
          if (price === 'refused') continue;
          evidence = price;
          amountMicro = nativeToMicro(
            BigInt(row.amount_raw),
            native.decimals,
            { answer: price.answer, feedDecimals: price.decimals, updatedAtS: 0n },
            native.spreadBps,
          );
        }
        if (amountMicro === null) continue;
        const outcome = await settleFinalDeposit(this.#deps, row.id, { amountMicro, price: evidence });
        progressed = true;
        if (outcome === 'credited') result.credited++;
        else if (outcome === 'held') result.held++;
        else if (outcome === 'below_minimum') result.belowMinimum++;
      }
      // Only unpriceable native deposits are left: they wait for a fresh price.
      if (!progressed) return;
    }
  }

  /** The oracle price as of the finalized block; a stale or non-positive one is refused (deposits wait, and say why). */
  async #priceAt(finalized: BlockRef): Promise<{ answer: bigint; decimals: number } | 'refused'> {
    const native = this.network.native;
    if (!native) return 'refused';
    const reading = await this.#reader.price(native.priceFeed, finalized.number);
    const refusal = priceRefusal(reading, finalized.timestamp, BigInt(this.#deps.payments.priceMaxAgeS));
    if (refusal) {
      this.#events.warn?.(
        { network: this.network.name, refusal, updated_at_s: reading.updatedAtS.toString() },
        'native deposits wait: price refused',
      );
      const seen = await seenDepositsUpTo(this.#deps.store.db, this.network.chainId, finalized.number, SETTLE_BATCH);
      for (const row of seen) if (row.token_address === null) await noteSeenDeposit(this.#deps.store.db, row.id, refusal);
      return 'refused';
    }
    return { answer: reading.answer, decimals: reading.feedDecimals };
  }

  #reportFinality(advancedAt: string | null, head: bigint, finalized: bigint, cursor: bigint): void {
    const thresholdMs = this.#deps.payments.finalityStallAlertS * 1000;
    const stalled = advancedAt !== null && finalityStalled(Date.parse(advancedAt), this.#now().getTime(), thresholdMs);
    if (stalled && !this.#stalled) {
      this.#events.warn?.(
        {
          network: this.network.name,
          finalized: finalized.toString(),
          head: head.toString(),
          since: advancedAt,
          alert: 'chain_finality_stalled',
        },
        'ALERT: chain finality stalled: deposits on this network wait',
      );
    } else if (!stalled && this.#stalled) {
      this.#events.info?.({ network: this.network.name, finalized: finalized.toString() }, 'chain finality advancing again');
    }
    this.#stalled = stalled;
    this.#events.heads?.({ network: this.network.name, head, finalized, cursor, stalled });
  }
}

/** Whether a network's finality is stalled as the store last recorded it (any replica may ask, leader or not). */
export async function storedFinalityStalled(deps: DepositDeps, chainId: number): Promise<boolean | null> {
  const state = await watchState(deps.store.db, chainId);
  if (!state?.finalized_advanced_at) return null;
  return finalityStalled(Date.parse(state.finalized_advanced_at), deps.clock.now().getTime(), deps.payments.finalityStallAlertS * 1000);
}
