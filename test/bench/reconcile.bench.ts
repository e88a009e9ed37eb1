// The treasury's reconciliation at 10,000 deposit addresses (issue 22): the real service (services/treasury) over the
// real store (SQLite) and the viem ChainReader against anvil as Base, with TestUsdc at the real USDC address, an
// 18-decimal stablecoin and ETH (three balances an address), Multicall3 at its canonical address.
//   - every deposit address holds 1 USDC (its balance slot written directly: 10,000 transfers would only slow the
//     setup), and the run checks the total;
//   - one reconciliation per Multicall3 batch size (balance reads per call), median of --rounds runs: ms in all,
//     us per address, the number of multicalls;
//   - for reference, the same balances read one eth_call each (viem readContract, JSON-RPC batching on) for the first
//     1,000 addresses: what the read would cost without Multicall3.
//
// Run: pnpm exec tsx test/bench/reconcile.bench.ts [--addresses 10000] [--rounds 3]
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ViemChainReader } from '@ark/control-plane/chain/viem-reader';
import { systemClock } from '@ark/control-plane/clock';
import { paymentsConfigFrom } from '@ark/control-plane/config/payments';
import { treasuryConfigFrom } from '@ark/control-plane/config/treasury';
import { webhookAlertSink } from '@ark/control-plane/services/alerts/sink';
import { buildTreasuryServices } from '@ark/control-plane/services/treasury/index';
import { createTestStore } from '@ark/control-plane/testing/stores';
import { createPublicClient, encodeAbiParameters, http, keccak256, parseAbi, toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { BASE_USDC, setupDepositChain } from '../e2e/deposit-helpers.js';
import { installMulticall3, MULTICALL3_ADDRESS, startAnvil } from '../harness/anvil.js';

export interface BatchFigures {
  /** Balance reads in one Multicall3 call (ARK_MULTICALL_BATCH_CALLS). */
  batchCalls: number;
  multicalls: number;
  ms: number;
  usPerAddress: number;
  /** CPU time of this process (the service, viem, the store) in the run: what the node (anvil) does is the rest. */
  cpuMs: number;
}

export interface ReconcileBenchFigures {
  loadAvgBefore: number;
  depositAddresses: number;
  /** Balances read per address: USDC, the 18-decimal stablecoin, ETH. */
  balancesPerAddress: number;
  batches: BatchFigures[];
  /** The same reads one eth_call each, over `addresses` addresses. */
  oneCallPerBalance: { addresses: number; ms: number; usPerAddress: number };
}

export interface ReconcileBenchOptions {
  addresses?: number;
  rounds?: number;
  batchCalls?: number[];
  log?: (line: string) => void;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const ERC20 = parseAbi(['function balanceOf(address) view returns (uint256)']);

export async function run(options: ReconcileBenchOptions = {}): Promise<ReconcileBenchFigures> {
  const count = Math.max(100, Math.min(options.addresses ?? 10_000, 100_000));
  const rounds = Math.max(1, Math.min(options.rounds ?? 3, 20));
  const batchCalls = options.batchCalls ?? [100, 250, 500, 1_000, 2_000];
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const loadAvgBefore = Math.round((loadavg()[0] as number) * 100) / 100;
  const anvil = await startAnvil();
  const store = await createTestStore('sqlite', { sqliteSynchronous: 'FULL' });
  try {
    const chain = await setupDepositChain(anvil);
    await installMulticall3(anvil);
    const payments = paymentsConfigFrom({ ARK_CHAINS: chain.chainsFile }, (message) => new Error(message));
    const networks = payments.chains?.networks ?? [];

    log(`reconcile bench: ${count} deposit addresses, 1 USDC each`);
    const addresses = Array.from({ length: count }, () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as `0x${string}`);
    for (let i = 0; i < count; i += 500) {
      await store.db
        .insertInto('deposit_addresses')
        .values(
          addresses.slice(i, i + 500).map((address, k) => ({
            account_id: randomUUID(),
            derivation_index: BigInt(i + k),
            address,
            created_at: new Date().toISOString(),
          })),
        )
        .execute();
    }
    // TestUsdc's balanceOf is the first state variable (slot 0): the balance of `a` lives at keccak256(a . 0).
    const oneUsdc = toHex(1_000_000n, { size: 32 });
    for (let i = 0; i < count; i += 200) {
      await Promise.all(
        addresses.slice(i, i + 200).map((address) => {
          const slot = keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [address, 0n]));
          return anvil.rpc('anvil_setStorageAt', [BASE_USDC, slot, oneUsdc]);
        }),
      );
    }
    await anvil.mine(3);

    const batches: BatchFigures[] = [];
    for (const calls of batchCalls) {
      const settings = treasuryConfigFrom({ ARK_MULTICALL_BATCH_CALLS: String(calls) }, (message) => new Error(message));
      const reader = new ViemChainReader({ rpcUrl: anvil.url, multicallAddress: MULTICALL3_ADDRESS, multicallBatchCalls: calls });
      const treasury = buildTreasuryServices({
        store,
        clock: systemClock,
        networks,
        settings,
        chain: { readerFor: () => reader, payoutWalletAddress: null },
        alerts: webhookAlertSink({ url: null, clock: systemClock }),
      });
      const times: number[] = [];
      const cpu: number[] = [];
      let multicalls = 0;
      for (let r = 0; r < rounds; r++) {
        const started = performance.now();
        const cpuBefore = process.cpuUsage();
        const result = await treasury.reconcile('cli');
        times.push(performance.now() - started);
        const used = process.cpuUsage(cpuBefore);
        cpu.push((used.user + used.system) / 1000);
        multicalls = result.multicalls;
        const usdc = result.report.networks[0]?.stablecoins.find((a) => a.symbol === 'USDC');
        if (result.depositAddresses !== count || usdc?.byPlace.deposit_addresses !== BigInt(count) * 1_000_000n)
          throw new Error(`the reconciliation read ${result.depositAddresses} addresses and ${usdc?.byPlace.deposit_addresses} USDC`);
      }
      const ms = Math.round(median(times));
      const cpuMs = Math.round(median(cpu));
      batches.push({ batchCalls: calls, multicalls, ms, usPerAddress: Math.round((median(times) * 1000) / count), cpuMs });
      log(`reconcile bench: ${calls} calls a multicall: ${multicalls} multicalls, ${ms} ms (${cpuMs} ms CPU here)`);
    }

    // The reference: one eth_call per balance (JSON-RPC batched by the transport, as the reader's client is).
    const sample = addresses.slice(0, Math.min(1_000, count));
    const client = createPublicClient({ transport: http(anvil.url, { batch: { batchSize: 100, wait: 0 } }) });
    const block = await client.getBlockNumber();
    const started = performance.now();
    for (let i = 0; i < sample.length; i += 50) {
      await Promise.all(
        sample
          .slice(i, i + 50)
          .flatMap((address) => [
            client.readContract({ address: BASE_USDC, abi: ERC20, functionName: 'balanceOf', args: [address], blockNumber: block }),
            client.readContract({ address: chain.stable18, abi: ERC20, functionName: 'balanceOf', args: [address], blockNumber: block }),
            client.getBalance({ address, blockNumber: block }),
          ]),
      );
    }
    const naiveMs = performance.now() - started;
    return {
      loadAvgBefore,
      depositAddresses: count,
      balancesPerAddress: 3,
      batches,
      oneCallPerBalance: { addresses: sample.length, ms: Math.round(naiveMs), usPerAddress: Math.round((naiveMs * 1000) / sample.length) },
    };
  } finally {
    await store.destroy();
    await anvil.stop();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { addresses: { type: 'string' }, rounds: { type: 'string' } } });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const figures = await run({ addresses: num(values.addresses), rounds: num(values.rounds) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
