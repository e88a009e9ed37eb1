import { createHash } from 'node:crypto';
import type { Fees, PayoutWallet, SignedTransfer, TransferReceipt } from '../chain/payout-wallet.js';
import type { BlockRef, ChainReader, Hex, TokenTransfer } from '../chain/reader.js';
import type { SettlementReceipt, SignedSettlement, X402Chain } from '../chain/x402-chain.js';
import type { Eip3009Authorization } from '../domain/payments/x402.js';
import { authorizationTypes } from '@x402/evm';
import { getAddress, recoverTypedDataAddress } from 'viem';

// The simulator's chain: Base with USDC at its real address, in memory. Blocks are mined when the simulation says
// so; a block is final FINALITY_DEPTH blocks later (as on anvil in the end-to-end suites); a reorg replaces blocks
// above the finalized one only. Three faces over the one chain, each the narrow interface the control plane reads
// it through: the deposit watcher's ChainReader, the payer's PayoutWallet and x402's settlement side. Every
// transfer the control plane makes (a payout, a settlement) is recorded as mined, so the model can check each was
// paid once.

export const BASE_CHAIN_ID = 8453;
export const BASE_USDC: Hex = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
/** A block is final this many blocks below the head. */
export const FINALITY_DEPTH = 2;
/** What every wallet the simulation does not track holds: enough for anything asked. */
const PLENTY = 10n ** 15n;

/** A hash of a label: transaction and block hashes are reproducible from the simulation's own counters. */
export function hashOf(label: string): Hex {
  return `0x${createHash('sha256').update(label).digest('hex')}`;
}

/** A USDC transfer from a user's wallet to an address (a deposit). */
export interface DepositTx {
  kind: 'deposit';
  hash: Hex;
  from: Hex;
  to: Hex;
  value: bigint;
}

/** A transfer signed by the payout wallet. */
export interface PayoutTx {
  kind: 'payout';
  hash: Hex;
  raw: Hex;
  nonce: bigint;
  to: Hex;
  amount: bigint;
  maxFeePerGas: bigint;
}

/** An x402 settlement (transferWithAuthorization) sent by our gas wallet. */
export interface SettlementTx {
  kind: 'x402';
  hash: Hex;
  raw: Hex;
  authorization: Eip3009Authorization;
}

export type SimTx = DepositTx | PayoutTx | SettlementTx;

export interface MinedTx {
  tx: SimTx;
  success: boolean;
  /** The index of its USDC Transfer log in the block; null when it reverted. */
  logIndex: number | null;
}

interface Block extends BlockRef {
  txs: MinedTx[];
}

export interface ChainTransfer {
  hash: Hex;
  logIndex: number;
  blockNumber: bigint;
  from: Hex;
  to: Hex;
  value: bigint;
}

export class SimChain {
  readonly payoutWalletAddress: Hex = '0x00000000000000000000000000000000000a11ce';
  readonly gasWalletAddress: Hex = '0x0000000000000000000000000000000000009a50';
  readonly treasury: Hex = '0x000000000000000000000000000000000007ea50';
  readonly #blocks: Block[] = [];
  #mempool: SimTx[] = [];
  #forks = 0;
  #txCounter = 0;
  /** Blocks still to mine without any payout in them (a congested network: the payer's transfers wait). */
  #congestedBlocks = 0;
  readonly #now: () => Date;
  /** Bumped by every block mined or replaced: what `mined` cached before is stale. */
  #changes = 0;
  #minedCacheAt = -1;
  readonly #minedCache = new Map<string, unknown[]>();

  constructor(now: () => Date) {
    this.#now = now;
    // A few blocks of history, so the watcher's first cursor (the finalized block) is not block 0.
    for (let i = 0; i <= FINALITY_DEPTH + 1; i++) this.mine();
  }

  get head(): bigint {
    return BigInt(this.#blocks.length - 1);
  }

  get finalized(): bigint {
    const f = this.head - BigInt(FINALITY_DEPTH);
    return f < 0n ? 0n : f;
  }

  /** A user's wallet sends USDC to `to`; it is mined with the next block. Returns its hash. */
  sendDeposit(from: Hex, to: Hex, value: bigint): Hex {
    const hash = hashOf(`deposit:${this.#txCounter++}`);
    this.#mempool.push({ kind: 'deposit', hash, from: from.toLowerCase() as Hex, to: to.toLowerCase() as Hex, value });
    return hash;
  }

  /** Mines one block with what is pending (payouts in nonce order, none while congested). */
  mine(): void {
    const parent = this.#blocks[this.#blocks.length - 1];
    const number = BigInt(this.#blocks.length);
    const block: Block = {
      number,
      hash: hashOf(`block:${number}:${this.#forks}`),
      parentHash: parent?.hash ?? hashOf('genesis'),
      timestamp: BigInt(Math.floor(this.#now().getTime() / 1000)),
      txs: [],
    };
    let logIndex = 0;
    const pending = this.#mempool;
    this.#mempool = [];
    const congested = this.#congestedBlocks > 0;
    if (congested) this.#congestedBlocks--;
    let nextNonce = this.#nextPayoutNonce();
    const payouts = pending.filter((t): t is PayoutTx => t.kind === 'payout').sort((a, b) => Number(a.nonce - b.nonce));
    for (const tx of pending) {
      if (tx.kind === 'payout') continue;
      if (tx.kind === 'deposit') {
        block.txs.push({ tx, success: true, logIndex: logIndex++ });
        continue;
      }
      const ok = this.#settlementSucceeds(tx, block.timestamp, block.txs);
      block.txs.push({ tx, success: ok, logIndex: ok ? logIndex++ : null });
    }
    for (const tx of payouts) {
      if (tx.nonce < nextNonce) continue; // its nonce was mined by another transaction (a replacement): dropped
      if (congested || tx.nonce > nextNonce) {
        this.#mempool.push(tx);
        continue;
      }
      block.txs.push({ tx, success: true, logIndex: logIndex++ });
      nextNonce++;
    }
    this.#blocks.push(block);
    this.#changes++;
  }

  /**
   * Replaces the `depth` newest blocks (never a final one) by a longer branch. What they held goes back to the
   * mempool (`reinclude`) or is gone (a transfer replaced on the other branch: the user's money never left).
   * Returns the depth actually reorganized.
   */
  reorg(depth: number, reinclude: boolean): number {
    const d = Math.min(depth, Number(this.head - this.finalized));
    if (d <= 0) return 0;
    const orphaned = this.#blocks.splice(this.#blocks.length - d, d);
    this.#forks++;
    this.#changes++;
    const txs = orphaned.flatMap((b) => b.txs.map((m) => m.tx));
    // Our own transactions are re-sent by the control plane when they vanish; a user's deposit may be lost.
    this.#mempool = [...txs.filter((t) => reinclude || t.kind !== 'deposit'), ...this.#mempool];
    for (let i = 0; i <= d; i++) this.mine();
    return d;
  }

  /** The next `blocks` blocks carry no payout (the payer's transfers wait in the mempool, and get replaced). */
  congest(blocks: number): void {
    this.#congestedBlocks = Math.max(this.#congestedBlocks, blocks);
  }

  // ---- what the model reads: the canonical chain ----

  /** Canonical successful transactions of a kind, with their block, optionally only final ones (cached per chain change). */
  mined<K extends SimTx['kind']>(kind: K, finalOnly: boolean): Array<MinedTx & { tx: Extract<SimTx, { kind: K }>; blockNumber: bigint }> {
    const key = `${kind}:${finalOnly}`;
    if (this.#minedCacheAt !== this.#changes) {
      this.#minedCache.clear();
      this.#minedCacheAt = this.#changes;
    }
    const cached = this.#minedCache.get(key);
    if (cached) return cached as Array<MinedTx & { tx: Extract<SimTx, { kind: K }>; blockNumber: bigint }>;
    const out: Array<MinedTx & { tx: Extract<SimTx, { kind: K }>; blockNumber: bigint }> = [];
    const last = finalOnly ? this.finalized : this.head;
    for (const block of this.#blocks) {
      if (block.number > last) break;
      for (const m of block.txs) {
        if (m.tx.kind === kind && m.success) out.push({ ...m, tx: m.tx as Extract<SimTx, { kind: K }>, blockNumber: block.number });
      }
    }
    this.#minedCache.set(key, out);
    return out;
  }

  /** Deposits (user -> address) on the canonical chain. */
  deposits(finalOnly: boolean): ChainTransfer[] {
    return this.mined('deposit', finalOnly).map((m) => ({
      hash: m.tx.hash,
      logIndex: m.logIndex as number,
      blockNumber: m.blockNumber,
      from: m.tx.from,
      to: m.tx.to,
      value: m.tx.value,
    }));
  }

  // ---- internals ----

  #canonical(number: bigint): Block | null {
    return number >= 0n && number <= this.head ? (this.#blocks[Number(number)] ?? null) : null;
  }

  #findMined(hash: Hex): { block: Block; mined: MinedTx } | null {
    for (let i = this.#blocks.length - 1; i >= 0; i--) {
      const block = this.#blocks[i] as Block;
      const mined = block.txs.find((m) => m.tx.hash === hash);
      if (mined) return { block, mined };
    }
    return null;
  }

  #nextPayoutNonce(): bigint {
    let next = 0n;
    for (const block of this.#blocks) for (const m of block.txs) if (m.tx.kind === 'payout' && m.tx.nonce >= next) next = m.tx.nonce + 1n;
    return next;
  }

  #authorizationUsedBy(from: Hex, nonce: Hex, extra: MinedTx[] = []): Hex | null {
    const same = (m: MinedTx) =>
      m.tx.kind === 'x402' &&
      m.success &&
      m.tx.authorization.from === from.toLowerCase() &&
      m.tx.authorization.nonce === nonce.toLowerCase();
    for (const block of this.#blocks) for (const m of block.txs) if (same(m)) return m.tx.hash;
    for (const m of extra) if (same(m)) return m.tx.hash;
    return null;
  }

  #settlementSucceeds(tx: SettlementTx, timestamp: bigint, sameBlock: MinedTx[]): boolean {
    const a = tx.authorization;
    if (this.#authorizationUsedBy(a.from, a.nonce, sameBlock) !== null) return false;
    return timestamp > a.validAfter && timestamp < a.validBefore;
  }

  #addPending(tx: SimTx): 'sent' | 'known' {
    if (this.#findMined(tx.hash) || this.#mempool.some((t) => t.hash === tx.hash)) return 'known';
    this.#mempool.push(tx);
    return 'sent';
  }

  // ---- the deposit watcher's view ----

  readonly reader: ChainReader = {
    chainId: async () => BASE_CHAIN_ID,
    heads: async () => {
      const latest = this.#canonical(this.head) as Block;
      const finalized = this.#canonical(this.finalized) as Block;
      return { latest: refOf(latest), finalized: refOf(finalized) };
    },
    blockAt: async (number) => {
      const block = this.#canonical(number);
      return block ? refOf(block) : null;
    },
    tokenTransfers: async ({ tokens, to, fromBlock, toBlock }) => {
      if (!tokens.some((t) => t.toLowerCase() === BASE_USDC)) return [];
      const wanted = new Set(to.map((a) => a.toLowerCase()));
      const out: TokenTransfer[] = [];
      for (let n = fromBlock; n <= toBlock && n <= this.head; n++) {
        const block = this.#canonical(n) as Block;
        for (const m of block.txs) {
          const transfer = transferOf(m, this);
          if (transfer && wanted.has(transfer.to)) {
            out.push({
              token: BASE_USDC,
              from: transfer.from,
              to: transfer.to,
              value: transfer.value,
              txHash: m.tx.hash,
              logIndex: m.logIndex as number,
              blockNumber: block.number,
              blockHash: block.hash,
            });
          }
        }
      }
      return out;
    },
    nativeTransfers: async () => {
      throw new Error('the simulated network has no native coin');
    },
    price: async () => {
      throw new Error('the simulated network has no price feed');
    },
    // Reconciliation's reads: the simulation runs no treasury worker (what the chain holds is checked from the model).
    holdings: async () => {
      throw new Error('the simulated network answers no holdings read');
    },
    authorizationDomain: async () => ({ name: 'USD Coin', version: '2' }),
  };

  // ---- the payer's wallet ----

  readonly payoutWallet: PayoutWallet = {
    address: this.payoutWalletAddress,
    chainId: async () => BASE_CHAIN_ID,
    pendingNonce: async () => {
      let next = this.#nextPayoutNonce();
      for (const t of this.#mempool) if (t.kind === 'payout' && t.nonce >= next) next = t.nonce + 1n;
      return next;
    },
    fees: async (): Promise<Fees> => ({ maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n }),
    signTransfer: async (input): Promise<SignedTransfer> => {
      const body = {
        kind: 'payout',
        nonce: input.nonce.toString(),
        to: input.to.toLowerCase(),
        amount: input.amount.toString(),
        token: input.token.toLowerCase(),
        maxFeePerGas: input.fees.maxFeePerGas.toString(),
      };
      const raw = `0x${Buffer.from(JSON.stringify(body)).toString('hex')}` as Hex;
      return { raw, hash: hashOf(raw) };
    },
    broadcast: async (raw) => {
      const body = JSON.parse(Buffer.from(raw.slice(2), 'hex').toString()) as Record<string, string>;
      const tx: PayoutTx = {
        kind: 'payout',
        hash: hashOf(raw),
        raw,
        nonce: BigInt(body.nonce as string),
        to: body.to as Hex,
        amount: BigInt(body.amount as string),
        maxFeePerGas: BigInt(body.maxFeePerGas as string),
      };
      if (tx.nonce < this.#nextPayoutNonce()) return 'known';
      const same = this.#mempool.findIndex((t) => t.kind === 'payout' && t.nonce === tx.nonce);
      if (same >= 0) {
        const existing = this.#mempool[same] as PayoutTx;
        if (existing.hash === tx.hash || existing.maxFeePerGas >= tx.maxFeePerGas) return 'known';
        this.#mempool.splice(same, 1); // replaced at the same nonce by a higher fee
      }
      return this.#addPending(tx);
    },
    receipt: async (hash): Promise<TransferReceipt | null> => {
      const found = this.#findMined(hash);
      if (found?.mined.tx.kind !== 'payout') return null;
      return { success: found.mined.success, blockNumber: found.block.number, feeWei: 21_000n * 1_000_000_000n };
    },
    finalizedBlock: async () => this.finalized,
    tokenBalance: async () => PLENTY,
    nativeBalance: async () => PLENTY * 1_000_000n,
  };

  // ---- x402's settlement side ----

  readonly x402: X402Chain = {
    gasWallet: this.gasWalletAddress,
    chainId: async () => BASE_CHAIN_ID,
    authorizationUsed: async (_token, from, nonce) => this.#authorizationUsedBy(from, nonce) !== null,
    balanceOf: async () => PLENTY,
    recoverSigner: async (token, domain, authorization, signature) => {
      try {
        const signer = await recoverTypedDataAddress({
          domain: { ...domain, chainId: BASE_CHAIN_ID, verifyingContract: getAddress(token) },
          types: authorizationTypes,
          primaryType: 'TransferWithAuthorization',
          message: { ...authorization, from: getAddress(authorization.from), to: getAddress(authorization.to) },
          signature,
        });
        return signer.toLowerCase() as Hex;
      } catch {
        return null;
      }
    },
    simulate: async (_token, authorization) => {
      if (this.#authorizationUsedBy(authorization.from, authorization.nonce) !== null) return { ok: false, why: 'authorization used' };
      const now = (this.#canonical(this.head) as Block).timestamp;
      return now < authorization.validBefore ? { ok: true } : { ok: false, why: 'authorization expired' };
    },
    pendingNonce: async () => BigInt(this.#txCounter),
    signSettlement: async (_token, authorization, _signature, gasNonce): Promise<SignedSettlement> => {
      const body = {
        kind: 'x402',
        gasNonce: gasNonce.toString(),
        ...Object.fromEntries(Object.entries(authorization).map(([k, v]) => [k, String(v).toLowerCase()])),
      };
      const raw = `0x${Buffer.from(JSON.stringify(body)).toString('hex')}` as Hex;
      return { gasWallet: this.gasWalletAddress, gasNonce, rawTx: raw, txHash: hashOf(raw) };
    },
    broadcast: async (raw) => {
      const body = JSON.parse(Buffer.from(raw.slice(2), 'hex').toString()) as Record<string, string>;
      const authorization: Eip3009Authorization = {
        from: body.from as Hex,
        to: body.to as Hex,
        value: BigInt(body.value as string),
        validAfter: BigInt(body.validAfter as string),
        validBefore: BigInt(body.validBefore as string),
        nonce: body.nonce as Hex,
      };
      this.#txCounter++;
      // The gas wallet's transaction is mined at once (anvil's automine): the top-up answers without waiting.
      if (this.#addPending({ kind: 'x402', hash: hashOf(raw), raw, authorization }) === 'sent') this.mine();
    },
    receipt: async (txHash, transfer): Promise<SettlementReceipt | null> => {
      const found = this.#findMined(txHash);
      if (found?.mined.tx.kind !== 'x402') return null;
      const a = found.mined.tx.authorization;
      const matches = a.from === transfer.from.toLowerCase() && a.to === transfer.to.toLowerCase() && a.value === transfer.value;
      return {
        success: found.mined.success,
        blockNumber: found.block.number,
        blockHash: found.block.hash,
        transferLogIndex: found.mined.success && matches ? found.mined.logIndex : null,
      };
    },
    authorizationUsedBy: async (_token, from, nonce) => this.#authorizationUsedBy(from, nonce),
    latestTimeS: async () => (this.#canonical(this.head) as Block).timestamp,
    finalized: async () => {
      const block = this.#canonical(this.finalized) as Block;
      return { number: block.number, hash: block.hash };
    },
    blockHashAt: async (number) => this.#canonical(number)?.hash ?? null,
  };
}

function refOf(block: Block): BlockRef {
  return { number: block.number, hash: block.hash, parentHash: block.parentHash, timestamp: block.timestamp };
}

/** The USDC Transfer log a mined transaction made, if any. */
function transferOf(m: MinedTx, chain: SimChain): { from: Hex; to: Hex; value: bigint } | null {
  if (!m.success) return null;
  switch (m.tx.kind) {
    case 'deposit':
      return { from: m.tx.from, to: m.tx.to, value: m.tx.value };
    case 'payout':
      return { from: chain.payoutWalletAddress, to: m.tx.to, value: m.tx.amount };
    case 'x402':
      return { from: m.tx.authorization.from, to: chain.treasury, value: m.tx.authorization.value };
  }
}
