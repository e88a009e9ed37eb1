// Meter receipts across a crash and across replicas (issue 26 item 5), on PostgreSQL: a replica applying receipts
// from 16 running jobs in groups (gateway/applier.ts, services/jobs/metering-batch.ts) is killed with SIGKILL while
// groups are in flight, between accepting receipts and committing them. Then the agents resend every receipt, to two
// other replicas at once (each its own pool, both applying the same receipts concurrently, as when an agent
// reconnects elsewhere while its old connection's resends are still arriving). Owed to the renter and the host:
//   - nothing acknowledged is lost: right after the kill, every job has counted at least the receipts it was acked;
//   - nothing is counted twice: after the replay each job has counted each receipt exactly once (runtime, meter
//     seq, one host and one fee posting per receipt, lots summing to the host's charge), and the ledger verifies.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ManualClock } from '@ark/control-plane/clock';
import { applyingReplica } from '@ark/control-plane/gateway/testing/applying-replica';
import { verifyLedger } from '@ark/control-plane/store/ledger';
import { createTestApp, seedAccount, type TestApp, testConfig } from '@ark/control-plane/testing/app';
import { enrollDirect, sampleManifest } from '@ark/control-plane/testing/hosting';
import { agentHeartbeat, fund, reserveJob, runJob } from '@ark/control-plane/testing/renting';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../harness/processes.js';
import { type CrashInput, type CrashJob, RECEIPT_PERIOD_MS, receiptOf } from './meter-crash-child.js';

const JOBS = 16;
const RECEIPTS_PER_JOB = 150;
/** The kill lands once this share of all receipts was acknowledged: groups are in flight on both lanes then. */
const KILL_AT_SHARE = 0.3;
const childScript = fileURLToPath(new URL('./meter-crash-child.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

describe('meter receipts across a kill -9 and two replicas (postgres)', () => {
  let t: TestApp<ManualClock>;
  let dir: string;
  let child: ChildProcess | null = null;
  beforeAll(async () => {
    t = await createTestApp('postgres', { configOverrides: { newHostMachineCap: 1_000, spendRateCapMicroPerHour: 10n ** 15n } });
    dir = mkdtempSync(join(tmpdir(), 'ark-meter-crash-'));
  }, 60_000);
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await t?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loses no acknowledged receipt and counts none twice', async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10n ** 13n);
    const host = await seedAccount(t.ctx, { role: 'host' });
    const jobs: CrashJob[] = [];
    for (let i = 0; i < JOBS; i++) {
      const machineId = await enrollDirect(t.app, host, { manifest: sampleManifest({ hostname: `crash-${i}` }) });
      await agentHeartbeat(t.ctx, machineId);
      const offer = await t.store.db.selectFrom('offers').select('id').where('machine_id', '=', machineId).executeTakeFirstOrThrow();
      const machine = { host, machineId, offerId: offer.id };
      const { jobId } = await reserveJob(t.app, renter, machine, { duration_limit_s: 86_400, budget_micro: '10000000000' });
      const start = await runJob(t, machineId, jobId);
      jobs.push({ jobId, machineId, start: start.toISOString() });
    }
    await t.clock.advance(RECEIPTS_PER_JOB * RECEIPT_PERIOD_MS + 60_000);
    const input: CrashInput = {
      databaseUrl: t.store.location,
      secretKeyHex: t.ctx.config.secretKey.toString('hex'),
      now: t.clock.now().toISOString(),
      jobs,
      receiptsPerJob: RECEIPTS_PER_JOB,
    };
    const inputFile = join(dir, 'input.json');
    writeFileSync(inputFile, JSON.stringify(input));

    // The replica that dies: acknowledged receipts are those it wrote a line for (after their commit).
    const acked = new Map<string, number>(jobs.map((job) => [job.jobId, 0]));
    let ackCount = 0;
    let buffered = '';
    let stderr = '';
    child = spawn(process.execPath, ['--import', 'tsx', childScript, inputFile], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    const proc = child;
    proc.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    proc.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const [jobId, seq] = line.split(' ');
        if (jobId && seq && acked.has(jobId)) {
          acked.set(jobId, Math.max(acked.get(jobId) ?? 0, Number(seq)));
          ackCount++;
        }
      }
    });
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    await waitFor(() => ackCount >= JOBS * RECEIPTS_PER_JOB * KILL_AT_SHARE || proc.exitCode !== null, {
      timeoutMs: 120_000,
      intervalMs: 2,
      description: 'the dying replica to acknowledge a share of the receipts',
    });
    expect(proc.exitCode, stderr).toBeNull();
    proc.kill('SIGKILL');
    await exited;
    expect(proc.signalCode).toBe('SIGKILL');
    const ackedTotal = [...acked.values()].reduce((a, b) => a + b, 0);
    expect(ackedTotal).toBeLessThan(JOBS * RECEIPTS_PER_JOB);

    const counted = async () => {
      const rows = await t.store.db
        .selectFrom('jobs')
        .select(['id', 'accepted_runtime_ms', 'meter_seq', 'charged_host_micro'])
        .where(
          'id',
          'in',
          jobs.map((j) => j.jobId),
        )
        .execute();
      return new Map(rows.map((row) => [row.id, row]));
    };
    // Nothing acknowledged was lost, and what committed unacknowledged was counted once.
    let beforeReplay = 0;
    for (const [jobId, row] of await counted()) {
      const seq = Number(row.meter_seq);
      expect(seq).toBeGreaterThanOrEqual(acked.get(jobId) ?? 0);
      expect(BigInt(row.accepted_runtime_ms)).toBe(BigInt(seq) * BigInt(RECEIPT_PERIOD_MS));
      beforeReplay += seq;
    }

    // The agents resend everything they sent, to two replicas at once.
    const config = testConfig({ databaseUrl: t.store.location, secretKey: t.ctx.config.secretKey });
    const replicas = [applyingReplica(config, t.clock), applyingReplica(config, t.clock)];
    try {
      await Promise.all(
        replicas.flatMap((replica) =>
          jobs.map(async (job) => {
            for (let seq = 1; seq <= RECEIPTS_PER_JOB; seq++) await replica.applier.apply(job.machineId, receiptOf(job, seq));
          }),
        ),
      );
    } finally {
      for (const replica of replicas) await replica.close();
    }
    for (const [jobId, row] of await counted()) {
      expect(Number(row.meter_seq)).toBe(RECEIPTS_PER_JOB);
      expect(BigInt(row.accepted_runtime_ms)).toBe(BigInt(RECEIPTS_PER_JOB) * BigInt(RECEIPT_PERIOD_MS));
      const hostPostings = await t.store.db
        .selectFrom('ledger_postings')
        .select((eb) => eb.fn.countAll<string | number | bigint>().as('n'))
        .where('reference', '=', jobId)
        .where('kind', '=', 'charge_host')
        .executeTakeFirstOrThrow();
      expect(Number(hostPostings.n)).toBe(RECEIPTS_PER_JOB);
      const lots = await t.store.db
        .selectFrom('pending_earnings')
        .select((eb) => eb.fn.sum<string | number | bigint>('amount_micro').as('sum'))
        .where('job_id', '=', jobId)
        .executeTakeFirstOrThrow();
      expect(BigInt(lots.sum ?? 0)).toBe(BigInt(row.charged_host_micro));
    }
    expect((await verifyLedger(t.store)).ok).toBe(true);
    process.stderr.write(
      `meter-crash: ${ackCount} acknowledged before the kill, ${beforeReplay} committed, ${JOBS * RECEIPTS_PER_JOB} after the replay on two replicas\n`,
    );
  }, 240_000);
});
