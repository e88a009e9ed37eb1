// Deposits credited per second by the chain watcher, on SQLite (synchronous=FULL) and Postgres, and the time from a
// transfer's finality to its credit. Real parts: anvil as Base (a block is final two blocks later) with TestUsdc at
// the real Base USDC address, the real store, and the real ChainWatcher over the viem ChainReader, run in process.
//   - burst: 1,000 USDC transfers to 100 deposit addresses mined in a few blocks, made final, then watcher steps until
//     all are credited (getLogs over the range, SEEN rows, then one credit transaction each);
//   - the same run's raw ledger loop: 1,000 external -> available postings with exactly-once keys, one transaction each,
//     on the same store; the ratio says what the watcher costs beyond the ledger itself;
//   - finality to credit: single transfers made final while the watcher polls at ARK_CHAIN_POLL_INTERVAL_MS's
//     default (2 s); the median of the samples (about half the interval is the wait for the next step).
//
// Run: pnpm exec tsx test/bench/deposits.bench.ts [--transfers 1000] [--samples 5]
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ViemChainReader } from '@ark/control-plane/chain/viem-reader';
import { systemClock } from '@ark/control-plane/clock';
import { paymentsConfigFrom } from '@ark/control-plane/config/payments';
import { ledgerAccounts } from '@ark/control-plane/domain/ledger/accounts';
import { paidAdmissionGuard } from '@ark/control-plane/services/admissions/guard';
import { buildDepositServices } from '@ark/control-plane/services/billing/deposits-index';
import type { Dialect } from '@ark/control-plane/store/db';
import { runTransfer, verifyLedger } from '@ark/control-plane/store/ledger';
import { createTestStore } from '@ark/control-plane/testing/stores';
import { type Address, encodeFunctionData, type Hex } from 'viem';
import { BASE_USDC, randomDepositXpub, setupDepositChain } from '../e2e/deposit-helpers.js';
import { startAnvil } from '../harness/anvil.js';

export interface DialectDepositFigures {
  transfers: number;
  blocks: number;
  /** Watcher steps from a final burst to every deposit credited. */
  watcherSeconds: number;
  creditedPerSecond: number;
  /** Raw ledger postings (external -> available, exactly-once key) per second, same store, same run. */
  rawLedgerPerSecond: number;
  /** creditedPerSecond / rawLedgerPerSecond */
  watcherToLedgerRatio: number;
  /** From the block that made a transfer final to its credit, polling every pollIntervalMs. */
  finalityToCreditMs: { median: number; max: number; samples: number; pollIntervalMs: number };
}

export interface DepositBenchFigures {
  loadAvgBefore: number;
  sqliteSynchronous: 'FULL';
  sqlite: DialectDepositFigures;
  postgres: DialectDepositFigures;
}

export interface DepositBenchOptions {
  transfers?: number;
  samples?: number;
  log?: (line: string) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ACCOUNTS = 100;

async function measure(dialect: Dialect, transfers: number, samples: number, log: (line: string) => void): Promise<DialectDepositFigures> {
  const anvil = await startAnvil();
  const store = await createTestStore(dialect, { sqliteSynchronous: 'FULL' });
  try {
    const chain = await setupDepositChain(anvil);
    const payments = paymentsConfigFrom(
      { ARK_CHAINS: chain.chainsFile, ARK_DEPOSIT_XPUB: randomDepositXpub(), ARK_BALANCE_CAP_MICRO: '0', ARK_CHAIN_MAX_BLOCKS: '1000' },
      (message) => new Error(message),
    );
    const deposits = buildDepositServices({ store, clock: systemClock, payments, admissions: paidAdmissionGuard({ clock: systemClock }) });
    const network = deposits.networks()[0];
    if (!network) throw new Error('no network');
    const watcher = deposits.watcher(network, new ViemChainReader({ rpcUrl: anvil.url }));
    await watcher.step();
    const addresses: Address[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const view = await deposits.address(randomUUID());
      if (!view) throw new Error('deposits not configured');
      addresses.push(view.address as Address);
    }
    await watcher.step();

    // The burst: sent to the pool with automine off, then mined block by block until the pool is empty.
    log(`deposits bench (${dialect}): sending ${transfers} transfers`);
    await anvil.rpc('evm_setAutomine', [false]);
    const abi = chain.contracts.TestUsdc.abi;
    // Explicit nonces: transactions sent in parallel would otherwise race for the same one.
    const nonce = BigInt(await anvil.rpc<string>('eth_getTransactionCount', [chain.funder, 'pending']));
    for (let i = 0; i < transfers; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, transfers - i) }, (_, j) =>
          anvil.rpc<Hex>('eth_sendTransaction', [
            {
              from: chain.funder,
              to: BASE_USDC,
              gas: '0x30000',
              nonce: `0x${(nonce + BigInt(i + j)).toString(16)}`,
              data: encodeFunctionData({
                abi,
                functionName: 'transfer',
                args: [addresses[(i + j) % ACCOUNTS], 1_000_000n + BigInt(i + j)],
              }),
            },
          ]),
        ),
      );
    }
    const firstBlock = (await anvil.blockNumber()) + 1n;
    for (let guard = 0; guard < 100; guard++) {
      const pool = await anvil.rpc<{ pending: string }>('txpool_status');
      if (BigInt(pool.pending) === 0n) break;
      await anvil.mine(1);
    }
    const blocks = Number((await anvil.blockNumber()) - firstBlock + 1n);
    await anvil.mine(2);

    const started = performance.now();
    let credited = 0;
    while (credited < transfers) {
      const result = await watcher.step();
      credited += result.credited;
      if (performance.now() - started > 300_000) throw new Error(`only ${credited} of ${transfers} credited in 300 s`);
    }
    const watcherMs = performance.now() - started;

    // The same store's raw ledger loop: the floor a deposit credit cannot beat.
    const rawStarted = performance.now();
    for (let i = 0; i < transfers; i++) {
      await runTransfer(store, {
        from: ledgerAccounts.external('bench'),
        to: ledgerAccounts.available(randomUUID()),
        amountMicro: 1_000_000n,
        kind: 'deposit',
        reference: `bench:${i}`,
        externalRef: `bench:${randomUUID()}`,
        at: new Date(),
      });
    }
    const rawMs = performance.now() - rawStarted;
    if (!(await verifyLedger(store)).ok) throw new Error('the ledger does not verify after the burst');

    // Finality to credit, with the watcher polling at the default interval.
    const pollIntervalMs = 2000;
    let polling = true;
    const loop = (async () => {
      while (polling) {
        await watcher.step();
        await sleep(pollIntervalMs);
      }
    })();
    const latencies: number[] = [];
    for (let s = 0; s < samples; s++) {
      const hash = await anvil.rpc<Hex>('eth_sendTransaction', [
        {
          from: chain.funder,
          to: BASE_USDC,
          gas: '0x30000',
          data: encodeFunctionData({ abi, functionName: 'transfer', args: [addresses[s % ACCOUNTS], 3_000_000n + BigInt(s)] }),
        },
      ]);
      await anvil.mine(1);
      await sleep(Math.random() * pollIntervalMs);
      await anvil.mine(2);
      const final = performance.now();
      for (;;) {
        const row = await store.db
          .selectFrom('chain_deposits')
          .select('state')
          .where('tx_hash', '=', hash.toLowerCase())
          .executeTakeFirst();
        if (row?.state === 'CREDITED') break;
        if (performance.now() - final > 60_000) throw new Error('a deposit was not credited within 60 s of finality');
        await sleep(10);
      }
      latencies.push(performance.now() - final);
    }
    polling = false;
    await loop;
    latencies.sort((a, b) => a - b);

    const creditedPerSecond = Math.round((transfers * 1000) / watcherMs);
    const rawLedgerPerSecond = Math.round((transfers * 1000) / rawMs);
    return {
      transfers,
      blocks,
      watcherSeconds: Math.round(watcherMs / 100) / 10,
      creditedPerSecond,
      rawLedgerPerSecond,
      watcherToLedgerRatio: Math.round((creditedPerSecond / rawLedgerPerSecond) * 100) / 100,
      finalityToCreditMs: {
        median: Math.round(latencies[Math.floor(latencies.length / 2)] ?? 0),
        max: Math.round(latencies[latencies.length - 1] ?? 0),
        samples: latencies.length,
        pollIntervalMs,
      },
    };
  } finally {
    await store.destroy();
    await anvil.stop();
  }
}

export async function run(options: DepositBenchOptions = {}): Promise<DepositBenchFigures> {
  const transfers = Math.max(10, Math.min(options.transfers ?? 1000, 10_000));
  const samples = Math.max(1, Math.min(options.samples ?? 5, 50));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const loadAvgBefore = Math.round((loadavg()[0] as number) * 100) / 100;
  const sqlite = await measure('sqlite', transfers, samples, log);
  const postgres = await measure('postgres', transfers, samples, log);
  return { loadAvgBefore, sqliteSynchronous: 'FULL', sqlite, postgres };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { transfers: { type: 'string' }, samples: { type: 'string' } } });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const figures = await run({ transfers: num(values.transfers), samples: num(values.samples) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
