// Accepted meter receipts per second (DESIGN.md "Budgets": "meter receipts accepted: batched per job; report per
// second on SQLite and Postgres"), through the real path: RUNNING jobs made by the renting fixtures (live machines,
// quotes and reservations over HTTP, accepted and ready statuses), and receipts handed to the gateway's GroupApplier,
// which marks each message applied and runs the registered 'meter_receipt' handler (lock the job, evaluate the
// receipt, post the metered charge to the ledger, update the job) inside its transaction. Two ways:
//   - one receipt per transaction: receipts applied one after another, so each is alone in its commit;
//   - batched as the gateway applies them: every job sends its next receipt as soon as the previous one is applied
//     (one in flight per job, as an agent does), so receipts that arrive while a commit runs share the next one.
// SQLite runs with synchronous=FULL (money); Postgres gets a fresh database, dropped afterwards. Every receipt must
// be accepted: the bench checks the jobs' accepted runtime and the ledger afterwards.
//
// On PostgreSQL a third way follows: the jobs spread over three replicas (test/bench/meter-replicas.ts), each its own
// process and pool, applying at once, against the single process's figures above.
//
// Run: pnpm exec tsx test/bench/meter-receipts.bench.ts [--jobs 64] [--phase-s 3] [--replicas 3]
import type { MeterReceiptMessage } from '@ark/shared';
import { assembleApp } from '@ark/control-plane/app';
import { ManualClock } from '@ark/control-plane/clock';
import { GroupApplier } from '@ark/control-plane/gateway/applier';
import { createMetrics } from '@ark/control-plane/http/metrics';
import { Paginator } from '@ark/control-plane/http/pagination';
import { MemoryRateLimiter } from '@ark/control-plane/http/rate-limit';
import { replicaAdapters, serviceAdapters } from '@ark/control-plane/runtime';
import { buildServices } from '@ark/control-plane/services/index';
import { createAccountAuthenticator } from '@ark/control-plane/store/accounts-authenticator';
import type { Dialect } from '@ark/control-plane/store/db';
import { verifyLedger } from '@ark/control-plane/store/ledger';
import { seedAccount, testConfig } from '@ark/control-plane/testing/app';
import { fakeReadinessProbes } from '@ark/control-plane/testing/readiness';
import { enrollDirect, sampleManifest } from '@ark/control-plane/testing/hosting';
import { agentHeartbeat, fund, reserveJob, runJob } from '@ark/control-plane/testing/renting';
import { createTestStore } from '@ark/control-plane/testing/stores';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { receiptOf as crashReceiptOf, RECEIPT_PERIOD_MS } from '../e2e/meter-crash-child.js';
import { type ReplicaReceiptFigures, receiptsOnReplicas } from './meter-replicas.js';

export interface ReceiptRate {
  receipts: number;
  seconds: number;
  perSecond: number;
}

export interface DialectReceiptFigures {
  jobs: number;
  /** Seconds to make the RUNNING jobs (not measured below). */
  setupSeconds: number;
  onePerTransaction: ReceiptRate;
  batched: ReceiptRate;
  /** batched.perSecond / onePerTransaction.perSecond */
  batchGain: number;
  /** PostgreSQL: the jobs spread over several replicas (separate processes and pools) applying at once. */
  onReplicas?: ReplicaReceiptFigures;
}

export interface MeterReceiptFigures {
  loadAvgBefore: number;
  sqliteSynchronous: 'FULL';
  sqlite: DialectReceiptFigures;
  postgres: DialectReceiptFigures;
}

export interface MeterReceiptBenchOptions {
  /** RUNNING jobs, each on its own machine (default 64: at 1,700 receipts a second many jobs send at once). */
  jobs?: number;
  /** Replicas of the PostgreSQL replicas phase (default 3; 1 skips it). */
  replicas?: number;
  /** Seconds each way of applying receipts runs, per store (default 3). */
  phaseS?: number;
  log?: (line: string) => void;
}

const PERIOD_MS = RECEIPT_PERIOD_MS;
/** Receipts prepared per job (periods the clock has passed); a phase that runs out of them ends early. */
const MAX_RECEIPTS_PER_JOB = 2_000;

interface RunningJob {
  jobId: string;
  machineId: string;
  start: Date;
  /** The next meter_seq to send. */
  next: number;
}

async function measureDialect(
  dialect: Dialect,
  jobs: number,
  phaseMs: number,
  replicaCount: number,
  log: (line: string) => void,
): Promise<DialectReceiptFigures> {
  const setupStarted = performance.now();
  const store = await createTestStore(dialect, { sqliteSynchronous: 'FULL' });
  const clock = new ManualClock();
  // Up to 256 jobs of one renter: past the default spend-rate cap, which is not what this bench measures.
  const config = testConfig({
    databaseUrl: dialect === 'postgres' ? store.location : null,
    newHostMachineCap: 100_000,
    spendRateCapMicroPerHour: 10n ** 15n,
  });
  const authenticator = createAccountAuthenticator(store);
  const rateLimiter = new MemoryRateLimiter();
  const mailer = { async send() {} };
  // No agent runs an SSH server here: readiness is verified by the test probes (testing/readiness.ts), as in the
  // route tests, so runJob's ready status makes the job RUNNING with its meter started.
  const services = buildServices({
    store,
    clock,
    config,
    mailer,
    ...serviceAdapters(config, clock),
    readinessProbes: fakeReadinessProbes(clock),
    x402Chain: null,
    walletCode: null,
  });
  const replicas = replicaAdapters(store, config.databaseUrl);
  // The app fills ctx.channel from the services: the handler table the gateway's applier runs below.
  const { app, ctx } = await assembleApp({
    config,
    store,
    clock,
    mailer,
    rateLimiter,
    authenticator,
    metrics: createMetrics(),
    paginator: new Paginator(config.secretKey),
    services,
    ...replicas,
  });
  await app.ready();
  try {
    const renter = await seedAccount(ctx);
    await fund(ctx, renter.accountId, 10n ** 15n);
    // One host with every machine (liveMachine seeds a host per machine, and each costs a password hash).
    const host = await seedAccount(ctx, { role: 'host' });
    const running: RunningJob[] = [];
    for (let i = 0; i < jobs; i++) {
      const machineId = await enrollDirect(app, host, { manifest: sampleManifest({ hostname: `rig-${i}` }) });
      await agentHeartbeat(ctx, machineId);
      const offer = await store.db.selectFrom('offers').select('id').where('machine_id', '=', machineId).executeTakeFirstOrThrow();
      const machine = { host, machineId, offerId: offer.id };
      const { jobId } = await reserveJob(app, renter, machine, { duration_limit_s: 86_400, budget_micro: '10000000000' });
      const start = await runJob({ ctx, clock }, machine.machineId, jobId);
      running.push({ jobId, machineId: machine.machineId, start, next: 1 });
    }
    // Every prepared period has ended by now, so each receipt is judged on its own merits, not refused as early.
    await clock.advance(MAX_RECEIPTS_PER_JOB * PERIOD_MS + 60_000);
    const setupSeconds = Math.round((performance.now() - setupStarted) / 100) / 10;
    log(`meter-receipts: ${dialect}: ${jobs} RUNNING jobs in ${setupSeconds} s`);

    // The gateway's applier, built as the gateway builds it.
    const applier = new GroupApplier({ store, handlers: ctx.channel, clock });
    // One machine per job: the meter seq is the message id (rising per machine), so the replicas phase's children
    // (test/e2e/meter-crash-child.ts, the same receipts) go on from it.
    const receiptOf = (job: RunningJob): MeterReceiptMessage =>
      crashReceiptOf({ jobId: job.jobId, machineId: job.machineId, start: job.start.toISOString() }, job.next++);
    const hasNext = (job: RunningJob) => job.next <= MAX_RECEIPTS_PER_JOB;

    // One receipt per transaction: one at a time, so the applier is idle and applies each alone.
    let started = performance.now();
    let applied = 0;
    for (let i = 0; performance.now() - started < phaseMs; i++) {
      const job = running[i % running.length] as RunningJob;
      if (!hasNext(job)) break;
      await applier.apply(job.machineId, receiptOf(job));
      applied++;
    }
    const single = rate(applied, performance.now() - started);
    log(`meter-receipts: ${dialect}: one per transaction: ${single.perSecond}/s`);

    // Batched: every job keeps one receipt in flight; those arriving during a commit share the next one.
    started = performance.now();
    let batchedCount = 0;
    await Promise.all(
      running.map(async (job) => {
        while (performance.now() - started < phaseMs && hasNext(job)) {
          await applier.apply(job.machineId, receiptOf(job));
          batchedCount++;
        }
      }),
    );
    const batched = rate(batchedCount, performance.now() - started);
    log(`meter-receipts: ${dialect}: batched: ${batched.perSecond}/s`);

    // PostgreSQL: the same jobs spread over three replicas (child processes, each its own pool), all at once.
    let onReplicas: ReplicaReceiptFigures | null = null;
    if (dialect === 'postgres' && replicaCount > 1) {
      const { figures, last } = await receiptsOnReplicas({
        databaseUrl: store.location,
        secretKeyHex: config.secretKey.toString('hex'),
        now: clock.now(),
        jobs: running.map((job) => ({ jobId: job.jobId, machineId: job.machineId, start: job.start.toISOString(), firstSeq: job.next })),
        maxSeq: MAX_RECEIPTS_PER_JOB,
        replicas: replicaCount,
        phaseMs,
      });
      for (const job of running) job.next = (last.get(job.jobId) ?? job.next - 1) + 1;
      onReplicas = figures;
      log(
        `meter-receipts: ${dialect}: on ${replicaCount} replicas: ${figures.perSecond}/s (${figures.perReplica.map((r) => r.perSecond).join(' + ')})`,
      );
    }

    // Every receipt was accepted in full, and the ledger still balances.
    const sent = running.reduce((sum, job) => sum + BigInt(job.next - 1), 0n);
    const accepted = await store.db
      .selectFrom('jobs')
      .select((eb) => eb.fn.sum<bigint | string>('accepted_runtime_ms').as('total'))
      .executeTakeFirstOrThrow();
    if (BigInt(accepted.total ?? 0) !== sent * BigInt(PERIOD_MS)) {
      throw new Error(
        `${dialect}: accepted runtime ${accepted.total} ms, expected ${sent * BigInt(PERIOD_MS)} ms: some receipts were not accepted`,
      );
    }
    const verification = await verifyLedger(store);
    if (!verification.ok) throw new Error(`${dialect}: the ledger does not verify after the bench`);
    return {
      jobs,
      setupSeconds,
      onePerTransaction: single,
      batched,
      batchGain: Math.round((batched.perSecond / Math.max(1, single.perSecond)) * 100) / 100,
      ...(onReplicas ? { onReplicas } : {}),
    };
  } finally {
    await app.close();
    await services.close();
    await replicas.claimLocks.close();
    authenticator.close();
    await rateLimiter.close();
    await store.destroy();
  }
}

const rate = (receipts: number, ms: number): ReceiptRate => ({
  receipts,
  seconds: Math.round(ms / 100) / 10,
  perSecond: Math.round((receipts * 1000) / Math.max(1, ms)),
});

export async function run(options: MeterReceiptBenchOptions = {}): Promise<MeterReceiptFigures> {
  const jobs = Math.max(1, Math.min(options.jobs ?? 64, 256));
  const replicas = Math.max(1, Math.min(options.replicas ?? 3, 8));
  const phaseMs = Math.max(500, Math.min((options.phaseS ?? 3) * 1000, 60_000));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const loadAvgBefore = Math.round((loadavg()[0] as number) * 100) / 100;
  const sqlite = await measureDialect('sqlite', jobs, phaseMs, 1, log);
  const postgres = await measureDialect('postgres', jobs, phaseMs, replicas, log);
  return { loadAvgBefore, sqliteSynchronous: 'FULL', sqlite, postgres };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { jobs: { type: 'string' }, 'phase-s': { type: 'string' }, replicas: { type: 'string' } } });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const figures = await run({ jobs: num(values.jobs), phaseS: num(values['phase-s']), replicas: num(values.replicas) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
