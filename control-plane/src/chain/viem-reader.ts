import { createPublicClient, http, parseAbi, parseAbiItem, type PublicClient } from 'viem';
import type { PriceReading } from '../domain/payments/amounts.js';
import type { BlockRef, ChainReader, Hex, NativeTransfer, TokenTransfer } from './reader.js';

const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const AGGREGATOR = parseAbi([
  'function decimals() view returns (uint8)',
  'function latestRoundData() view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)',
]);

export interface ViemChainReaderOptions {
  rpcUrl: string;
  /** One RPC call's limit. */
  timeoutMs?: number;
  /** Blocks fetched at once while scanning for native transfers (JSON-RPC batched). */
  blockConcurrency?: number;
}

/** The ChainReader over a viem public client on one RPC URL (JSON-RPC batching on, bounded retries). */
export class ViemChainReader implements ChainReader {
  readonly #client: PublicClient;
  readonly #blockConcurrency: number;

  constructor(options: ViemChainReaderOptions) {
    this.#client = createPublicClient({
      transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: 2, batch: { batchSize: 100, wait: 0 } }),
    });
    this.#blockConcurrency = Math.max(1, Math.min(options.blockConcurrency ?? 50, 200));
  }

  async chainId(): Promise<number> {
    return this.#client.getChainId();
  }

  async heads(): Promise<{ latest: BlockRef; finalized: BlockRef }> {
    const [latest, finalized] = await Promise.all([
      this.#client.getBlock({ blockTag: 'latest' }),
      this.#client.getBlock({ blockTag: 'finalized' }),
    ]);
    return { latest: ref(latest), finalized: ref(finalized) };
  }

  async blockAt(number: bigint): Promise<BlockRef | null> {
    try {
      return ref(await this.#client.getBlock({ blockNumber: number }));
    } catch (error) {
      if ((error as { name?: string }).name === 'BlockNotFoundError') return null;
      throw error;
    }
  }

  async tokenTransfers(query: {
    tokens: readonly Hex[];
    to: readonly Hex[];
    fromBlock: bigint;
    toBlock: bigint;
  }): Promise<TokenTransfer[]> {
    if (query.tokens.length === 0 || query.to.length === 0) return [];
    const logs = await this.#client.getLogs({
      address: [...query.tokens],
      event: TRANSFER,
      args: { to: [...query.to] },
      fromBlock: query.fromBlock,
      toBlock: query.toBlock,
      strict: true,
    });
    const out: TokenTransfer[] = [];
    for (const log of logs) {
      if (log.removed || log.blockHash === null || log.transactionHash === null || log.logIndex === null || log.blockNumber === null)
        continue;
      out.push({
        token: log.address.toLowerCase() as Hex,
        from: log.args.from.toLowerCase() as Hex,
        to: log.args.to.toLowerCase() as Hex,
        value: log.args.value,
        txHash: log.transactionHash.toLowerCase() as Hex,
        logIndex: log.logIndex,
        blockNumber: log.blockNumber,
        blockHash: log.blockHash.toLowerCase() as Hex,
      });
    }
    return out;
  }

  async nativeTransfers(query: {
    to: { has(address: string): boolean };
    fromBlock: bigint;
    toBlock: bigint;
  }): Promise<{ transfers: NativeTransfer[]; blocks: BlockRef[] }> {
    const transfers: NativeTransfer[] = [];
    const read: BlockRef[] = [];
    for (let start = query.fromBlock; start <= query.toBlock; start += BigInt(this.#blockConcurrency)) {
      const end = start + BigInt(this.#blockConcurrency) - 1n < query.toBlock ? start + BigInt(this.#blockConcurrency) - 1n : query.toBlock;
      const numbers: bigint[] = [];
      for (let n = start; n <= end; n++) numbers.push(n);
      const blocks = await Promise.all(numbers.map((blockNumber) => this.#client.getBlock({ blockNumber, includeTransactions: true })));
      const candidates: NativeTransfer[] = [];
      for (const block of blocks) {
        if (block.hash === null || block.number === null) throw new Error('a pending block came back from a numbered read');
        for (const tx of block.transactions) {
          if (tx.to === null || tx.value === 0n || !query.to.has(tx.to.toLowerCase())) continue;
          candidates.push({
            from: tx.from.toLowerCase() as Hex,
            to: tx.to.toLowerCase() as Hex,
            value: tx.value,
            txHash: tx.hash.toLowerCase() as Hex,
            blockNumber: block.number,
            blockHash: block.hash.toLowerCase() as Hex,
          });
        }
        read.push(ref(block));
      }
      // Only successful transactions moved the value: a reverted one keeps it with the sender.
      const receipts = await Promise.all(candidates.map((c) => this.#client.getTransactionReceipt({ hash: c.txHash })));
      candidates.forEach((c, i) => {
        if (receipts[i]?.status === 'success') transfers.push(c);
      });
    }
    return { transfers, blocks: read };
  }

  async price(feed: Hex, blockNumber: bigint): Promise<PriceReading> {
    const [decimals, round] = await Promise.all([
      this.#client.readContract({ address: feed, abi: AGGREGATOR, functionName: 'decimals', blockNumber }),
      this.#client.readContract({ address: feed, abi: AGGREGATOR, functionName: 'latestRoundData', blockNumber }),
    ]);
    return { answer: round[1], feedDecimals: Number(decimals), updatedAtS: round[3] };
  }
}

function ref(block: { number: bigint | null; hash: Hex | null; parentHash: Hex; timestamp: bigint }): BlockRef {
  if (block.number === null || block.hash === null) throw new Error('a pending block came back where a mined one was expected');
  return {
    number: block.number,
    hash: block.hash.toLowerCase() as Hex,
    parentHash: block.parentHash.toLowerCase() as Hex,
    timestamp: block.timestamp,
  };
}
