import type { PriceReading } from '../domain/payments/amounts.js';

// What the deposit watcher and the treasury's reconciliation need from a chain, and nothing more: a narrow seam with
// a viem implementation (viem-reader.ts) and whatever a test puts behind it.

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

/** Balances of many owners at one block (the treasury's reconciliation and sweep plan). */
export interface HoldingsQuery {
  owners: readonly Hex[];
  /** ERC-20 contracts whose `balanceOf` each owner is read for. */
  tokens: readonly Hex[];
  /** Whether the native coin's balance of each owner is read too. */
  native: boolean;
  /** Every balance is read at this block, so the figures add up. */
  blockNumber: bigint;
}

export interface Holdings {
  /** `tokenBalances[j][i]`: owner i's balance of token j, in the token's smallest unit. */
  tokenBalances: bigint[][];
  /** `nativeBalances[i]`: owner i's native balance (wei); null when not asked. */
  nativeBalances: bigint[] | null;
  /** Multicall3 calls (one eth_call each) the read took. */
  multicalls: number;
}

/** The EIP-712 domain of a token that implements EIP-3009 `transferWithAuthorization` (USDC). */
export interface AuthorizationDomain {
  name: string;
  version: string;
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
  /**
   * Balances of `owners` at one block, through Multicall3 in batches: one eth_call per batch of owners, never one
   * request per address. Throws when any balance cannot be read (a half-read would look like missing funds).
   */
  holdings(query: HoldingsQuery): Promise<Holdings>;
  /** The token's EIP-712 name and version when it implements EIP-3009 (name, version, authorizationState), else null. */
  authorizationDomain(token: Hex, blockNumber: bigint): Promise<AuthorizationDomain | null>;
  close?(): void;
}
