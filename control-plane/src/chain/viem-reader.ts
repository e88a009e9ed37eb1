import { createPublicClient, http, parseAbi, parseAbiItem, type PublicClient } from 'viem';
import type { PriceReading } from '../domain/payments/amounts.js';
import type { AuthorizationDomain, BlockRef, ChainReader, Hex, Holdings, HoldingsQuery, NativeTransfer, TokenTransfer } from './reader.js';

const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const AGGREGATE3 = parseAbi([
  'struct Call3 { address target; bool allowFailure; bytes callData; }',
  'struct Result { bool success; bytes returnData; }',
  // payable in Multicall3; read here by eth_call only, so declared view.
  'function aggregate3(Call3[] calls) view returns (Result[] returnData)',
]);
/** balanceOf(address) of an ERC-20, and Multicall3's getEthBalance(address). */
const BALANCE_OF = '0x70a08231';
const GET_ETH_BALANCE = '0x4d2301cc';
const EIP3009 = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
]);
const ZERO_ADDRESS: Hex = '0x0000000000000000000000000000000000000000';
const ZERO_NONCE: Hex = `0x${'0'.repeat(64)}`;
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
  /** The network's Multicall3 contract; absent: holdings and authorizationDomain refuse (never one call per address). */
  multicallAddress?: Hex | null;
  /** Balance reads in one Multicall3 call (its eth_call's gas and size grow with it). */
  multicallBatchCalls?: number;
  /** Multicall3 calls in flight at once. */
  multicallConcurrency?: number;
}

/** The ChainReader over a viem public client on one RPC URL (JSON-RPC batching on, bounded retries). */
export class ViemChainReader implements ChainReader {
  readonly #client: PublicClient;
  /** Multicalls go one per HTTP request: a JSON-RPC batch of several large eth_calls outgrows what nodes accept. */
  readonly #multicallClient: PublicClient;
  readonly #blockConcurrency: number;
  readonly #multicallAddress: Hex | null;
  readonly #batchCalls: number;
  readonly #multicallConcurrency: number;

  constructor(options: ViemChainReaderOptions) {
    this.#client = createPublicClient({
      transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: 2, batch: { batchSize: 100, wait: 0 } }),
    });
    this.#multicallClient = createPublicClient({
      transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: 2 }),
    });
    this.#blockConcurrency = Math.max(1, Math.min(options.blockConcurrency ?? 50, 200));
    this.#multicallAddress = options.multicallAddress ?? null;
    this.#batchCalls = Math.max(1, Math.min(options.multicallBatchCalls ?? 500, 2_000));
    this.#multicallConcurrency = Math.max(1, Math.min(options.multicallConcurrency ?? 4, 32));
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

  async holdings(query: HoldingsQuery): Promise<Holdings> {
    const multicallAddress = this.#requireMulticall();
    const perOwner = query.tokens.length + (query.native ? 1 : 0);
    const tokenBalances = query.tokens.map(() => new Array<bigint>(query.owners.length));
    const nativeBalances = query.native ? new Array<bigint>(query.owners.length) : null;
    if (perOwner === 0 || query.owners.length === 0) return { tokenBalances, nativeBalances, multicalls: 0 };
    // A batch holds whole owners, so each owner's balances come from one call.
    const ownersPerBatch = Math.max(1, Math.floor(this.#batchCalls / perOwner));
    const starts: number[] = [];
    for (let start = 0; start < query.owners.length; start += ownersPerBatch) starts.push(start);
    let next = 0;
    const worker = async () => {
      while (next < starts.length) {
        const start = starts[next++] as number;
        const owners = query.owners.slice(start, start + ownersPerBatch);
        // Call data built by hand (selector and one padded address): viem's per-call encoding was most of the CPU here.
        const calls = owners.flatMap((owner) => {
          const arg = owner.slice(2).toLowerCase().padStart(64, '0');
          return [
            ...query.tokens.map((token) => ({ target: token, allowFailure: false, callData: `${BALANCE_OF}${arg}` as Hex })),
            ...(query.native ? [{ target: multicallAddress, allowFailure: false, callData: `${GET_ETH_BALANCE}${arg}` as Hex }] : []),
          ];
        });
        const answers = await this.#multicallClient
          .readContract({
            address: multicallAddress,
            abi: AGGREGATE3,
            functionName: 'aggregate3',
            args: [calls],
            blockNumber: query.blockNumber,
          })
          .catch((error: unknown) => {
            // viem's message quotes every call of the batch: megabytes in a log line. Its short message says enough.
            throw new Error(
              `Multicall3 read of ${calls.length} balances at block ${query.blockNumber} failed: ${(error as { shortMessage?: string }).shortMessage ?? (error as Error).message}`,
            );
          });
        const results = answers.map((answer, i) => {
          // A target without code answers success and no data: not a balance, and never read as zero.
          if (!answer.success || answer.returnData.length !== 66)
            throw new Error(`Multicall3 read at block ${query.blockNumber}: ${calls[i]?.target} did not answer a balance`);
          return BigInt(answer.returnData);
        });
        owners.forEach((_, k) => {
          query.tokens.forEach((_, j) => {
            (tokenBalances[j] as bigint[])[start + k] = results[k * perOwner + j] as bigint;
          });
          if (nativeBalances) nativeBalances[start + k] = results[k * perOwner + query.tokens.length] as bigint;
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#multicallConcurrency, starts.length) }, worker));
    return { tokenBalances, nativeBalances, multicalls: starts.length };
  }

  async authorizationDomain(token: Hex, blockNumber: bigint): Promise<AuthorizationDomain | null> {
    const multicallAddress = this.#requireMulticall();
    const [name, version, state] = await this.#multicallClient.multicall({
      contracts: [
        { address: token, abi: EIP3009, functionName: 'name' },
        { address: token, abi: EIP3009, functionName: 'version' },
        { address: token, abi: EIP3009, functionName: 'authorizationState', args: [ZERO_ADDRESS, ZERO_NONCE] },
      ],
      multicallAddress,
      blockNumber,
      allowFailure: true,
      batchSize: 0,
    });
    if (name.status !== 'success' || version.status !== 'success' || state.status !== 'success') return null;
    return { name: name.result, version: version.result };
  }

  #requireMulticall(): Hex {
    if (this.#multicallAddress === null) throw new Error('no Multicall3 address is configured for this network (ARK_MULTICALL_ADDRESS)');
    return this.#multicallAddress;
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
