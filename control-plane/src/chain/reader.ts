import type { PriceReading } from '../domain/payments/amounts.js';

// What the deposit watcher needs from a chain, and nothing more: a narrow seam with a viem implementation
// (viem-reader.ts) and whatever a test puts behind it.

export type Hex = `0x${string}`;

export interface BlockRef {
  number: bigint;
  hash: Hex;
  parentHash: Hex;
  /** Unix seconds. */
  timestamp: bigint;
}

export interface TokenTransfer {
  token: Hex;
  /** The sender (lower-case): a refund goes back to it. */
  from: Hex;
  to: Hex;
  value: bigint;
  txHash: Hex;
  logIndex: number;
  blockNumber: bigint;
  blockHash: Hex;
}

export interface NativeTransfer {
  /** The transaction's sender (lower-case). */
  from: Hex;
  to: Hex;
  value: bigint;
  txHash: Hex;
  blockNumber: bigint;
  blockHash: Hex;
}

export interface ChainReader {
  /** The node's chain id (checked against the configuration before any read). */
  chainId(): Promise<number>;
  /** The `latest` and `finalized` blocks. */
  heads(): Promise<{ latest: BlockRef; finalized: BlockRef }>;
  /** The canonical block at a height, or null when the chain is not that long (any more). */
  blockAt(number: bigint): Promise<BlockRef | null>;
  /** ERC-20 Transfer logs of `tokens` to any of `to` in [fromBlock, toBlock]. */
  tokenTransfers(query: { tokens: readonly Hex[]; to: readonly Hex[]; fromBlock: bigint; toBlock: bigint }): Promise<TokenTransfer[]>;
  /**
   * Every block of [fromBlock, toBlock] (in order, as read), and the plain native transfers in them with a value to
   * any address in `to` (lower-case), successful transactions only.
   */
  nativeTransfers(query: {
    to: { has(address: string): boolean };
    fromBlock: bigint;
    toBlock: bigint;
  }): Promise<{ transfers: NativeTransfer[]; blocks: BlockRef[] }>;
  /** A Chainlink-style aggregator's latest round as of a block. */
  price(feed: Hex, blockNumber: bigint): Promise<PriceReading>;
  close?(): void;
}
