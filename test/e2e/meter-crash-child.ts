// The child of meter-crash.test.ts (and of meter-receipts.bench.ts's replicas): one control-plane replica's apply side (the real handler table and the gateway's
// GroupApplier over the test's PostgreSQL database) receiving every job's meter receipts as its agents send them, one
// in flight per job. A receipt is acknowledged (a line on stdout, "<job id> <meter seq>") only once its group
// committed, as the gateway's session acknowledges to the agent. The test kill -9s this process mid-stream.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { ManualClock } from '@ark/control-plane/clock';
import { applyingReplica } from '@ark/control-plane/gateway/testing/applying-replica';
import { testConfig } from '@ark/control-plane/testing/app';
import type { MeterReceiptMessage } from '@ark/shared';

export const RECEIPT_PERIOD_MS = 30_000;

export interface CrashJob {
  jobId: string;
  machineId: string;
  /** ISO time the meter started (the verified readiness). */
  start: string;
  /** The first meter seq to send (default 1). */
  firstSeq?: number;
}

export interface CrashInput {
  databaseUrl: string;
  secretKeyHex: string;
  /** The parent's clock reading: every receipt's period has ended by then. */
  now: string;
  jobs: CrashJob[];
  receiptsPerJob: number;
  /** Wait for a line on stdin before sending (several replicas start together), and stop after this long. */
  go?: { durationMs: number };
}

/** Receipt `seq` of a job, exactly as its agent sends it every time (message id = meter seq: one per machine). */
export function receiptOf(job: CrashJob, seq: number): MeterReceiptMessage {
  const periodStart = new Date(Date.parse(job.start) + (seq - 1) * RECEIPT_PERIOD_MS);
  return {
    v: 1,
    t: 'meter_receipt',
    sid: 'crash',
    seq,
    id: seq,
    job_id: job.jobId,
    fence: '1',
    meter_seq: seq,
    period_start: periodStart.toISOString(),
    period_end: new Date(periodStart.getTime() + RECEIPT_PERIOD_MS).toISOString(),
    runtime_ms: String(RECEIPT_PERIOD_MS),
    final: false,
  };
}

async function main(): Promise<void> {
  const input = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as CrashInput;
  const clock = new ManualClock(input.now);
  const replica = applyingReplica(testConfig({ databaseUrl: input.databaseUrl, secretKey: Buffer.from(input.secretKeyHex, 'hex') }), clock);
  process.stdout.write('ready\n');
  const go = input.go;
  if (go) await new Promise((resolve) => process.stdin.once('data', resolve));
  const started = performance.now();
  const cpuAtStart = process.cpuUsage();
  let applied = 0;
  const last: Record<string, number> = {};
  await Promise.all(
    input.jobs.map(async (job) => {
      const first = job.firstSeq ?? 1;
      for (let seq = first; seq < first + input.receiptsPerJob; seq++) {
        if (go && performance.now() - started >= go.durationMs) break;
        await replica.applier.apply(job.machineId, receiptOf(job, seq));
        applied++;
        last[job.jobId] = seq;
        if (!go) process.stdout.write(`${job.jobId} ${seq}\n`);
      }
    }),
  );
  const cpu = process.cpuUsage(cpuAtStart);
  const ms = Math.round(performance.now() - started);
  process.stdout.write(`${JSON.stringify({ done: true, applied, ms, cpuMs: Math.round((cpu.user + cpu.system) / 1000), last })}\n`);
  await replica.close();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`meter-crash-child: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
