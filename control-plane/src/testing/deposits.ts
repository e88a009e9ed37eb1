import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Fees, PayoutWallet, SignedTransfer, TransferReceipt, TransferToSign } from '../chain/payout-wallet.js';
import type { Hex } from '../chain/reader.js';
import type { Store } from '../store/db.js';
import { type SeenDeposit, upsertSeenDeposits } from '../store/deposits.js';

/** An ARK_CHAINS file naming Base with USDC and ETH (nothing listens at its RPC URL: for tests that read no chain). */
export function writeChainsFile(rpcUrl = 'http://127.0.0.1:9'): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ark-chains-')), 'chains.json');
  writeFileSync(
    file,
    JSON.stringify({
      networks: [
        {
          name: 'base',
          chain_id: 8453,
          rpc_url: rpcUrl,
          assets: [{ symbol: 'USDC', address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', decimals: 6 }],
          native: { symbol: 'ETH', decimals: 18, price_feed: `0x${'f'.repeat(40)}`, spread_bps: 100 },
        },
      ],
    }),
  );
  return file;
}

/** The USDC contract writeChainsFile names (lower-case, as the store keeps it). */
export const TEST_USDC = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';

let seenCounter = 0;

/** A deposit as the watcher records it: USDC on Base from `from`, with a fresh tx hash each call. */
export function seenUsdcDeposit(
  accountId: string,
  amountMicro: bigint,
  overrides: Partial<SeenDeposit> = {},
): SeenDeposit & { txHash: string } {
  seenCounter++;
  return {
    chainId: 8453,
    network: 'base',
    txHash: `0x${randomBytes(28).toString('hex')}${seenCounter.toString(16).padStart(8, '0')}`,
    logIndex: 0,
    accountId,
    address: `0x${'1'.repeat(40)}`,
    asset: 'USDC',
    tokenAddress: TEST_USDC,
    amountRaw: amountMicro,
    decimals: 6,
    amountMicro,
    blockNumber: 10n,
    blockHash: `0x${'3'.repeat(64)}`,
    fromAddress: `0x${'5'.repeat(40)}`,
    ...overrides,
  };
}

/** Records a deposit as SEEN (as the watcher does) and answers its id. */
export async function recordSeen(store: Store, deposit: SeenDeposit, at: Date): Promise<string> {
  await store.db.transaction().execute((trx) => upsertSeenDeposits(trx, [deposit], at));
  const row = await store.db
    .selectFrom('chain_deposits')
    .select('id')
    .where('tx_hash', '=', deposit.txHash.toLowerCase())
    .where('log_index', '=', BigInt(deposit.logIndex))
    .executeTakeFirstOrThrow();
  return row.id;
}

/**
 * A payout wallet over an in-memory chain: every signed transfer is kept, a broadcast one is mined at once in a
 * final block (or reverted, when `revert` is set), and `paid` lists what reached the chain, once per transfer.
 */
export class MemoryPayoutWallet implements PayoutWallet {
  readonly address: Hex = `0x${'9'.repeat(40)}`;
  readonly signed = new Map<Hex, TransferToSign>();
  readonly mined = new Map<Hex, { success: boolean }>();
  /** Set to make the next broadcasts revert on chain. */
  revert = false;

  async chainId(): Promise<number> {
    return 8453;
  }
  async pendingNonce(): Promise<bigint> {
    return BigInt(this.mined.size);
  }
  async fees(): Promise<Fees> {
    return { maxFeePerGas: 2n, maxPriorityFeePerGas: 1n };
  }
  async signTransfer(input: TransferToSign): Promise<SignedTransfer> {
    const hash = `0x${randomBytes(32).toString('hex')}` as Hex;
    this.signed.set(hash, input);
    return { raw: hash, hash };
  }
  async broadcast(raw: Hex): Promise<'sent' | 'known'> {
    if (this.mined.has(raw)) return 'known';
    this.mined.set(raw, { success: !this.revert });
    return 'sent';
  }
  async receipt(hash: Hex): Promise<TransferReceipt | null> {
    const mined = this.mined.get(hash);
    return mined ? { success: mined.success, blockNumber: 1n, feeWei: 21_000n } : null;
  }
  async finalizedBlock(): Promise<bigint> {
    return 100n;
  }
  async tokenBalance(): Promise<bigint> {
    return 10n ** 15n;
  }
  async nativeBalance(): Promise<bigint> {
    return 10n ** 18n;
  }
  /** The successful transfers on chain: recipient and amount. */
  paid(): Array<{ to: string; amount: bigint }> {
    return [...this.mined.entries()]
      .filter(([, m]) => m.success)
      .map(([hash]) => this.signed.get(hash) as TransferToSign)
      .map((t) => ({ to: t.to.toLowerCase(), amount: t.amount }));
  }
}
