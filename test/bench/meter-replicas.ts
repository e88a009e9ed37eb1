// The replicas phase of meter-receipts.bench.ts: the same RUNNING jobs' receipts applied by several replicas at once,
// each a child process with its own pool on the shared PostgreSQL database (test/e2e/meter-crash-child.ts: the real
// handler table and the gateway's GroupApplier), the jobs spread over them as agents would be, one receipt in flight
// per job. All start on one signal and stop after the phase; the rate is every replica's receipts over the longest
// replica's time.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CrashInput, CrashJob } from '../e2e/meter-crash-child.js';

const childScript = fileURLToPath(new URL('../e2e/meter-crash-child.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface ReplicaReceiptFigures {
  replicas: number;
  receipts: number;
  seconds: number;
  perSecond: number;
  /** Each replica's receipts per second and CPU (user + system) per receipt. */
  perReplica: Array<{ receipts: number; perSecond: number; cpuUsPerReceipt: number }>;
}

interface ChildResult {
  applied: number;
  ms: number;
  cpuMs: number;
  last: Record<string, number>;
}

/** Runs the phase; returns its figures and, per job, the last meter seq sent (the caller checks what was counted). */
export async function receiptsOnReplicas(options: {
  databaseUrl: string;
  secretKeyHex: string;
  now: Date;
  jobs: Array<CrashJob & { firstSeq: number }>;
  maxSeq: number;
  replicas: number;
  phaseMs: number;
}): Promise<{ figures: ReplicaReceiptFigures; last: Map<string, number> }> {
  const dir = mkdtempSync(join(tmpdir(), 'ark-meter-replicas-'));
  try {
    const children = Array.from({ length: options.replicas }, (_, r) => {
      const input: CrashInput = {
        databaseUrl: options.databaseUrl,
        secretKeyHex: options.secretKeyHex,
        now: options.now.toISOString(),
        jobs: options.jobs.filter((_, i) => i % options.replicas === r),
        receiptsPerJob: Math.max(0, options.maxSeq - Math.max(...options.jobs.map((j) => j.firstSeq)) + 1),
        go: { durationMs: options.phaseMs },
      };
      const file = join(dir, `replica-${r}.json`);
      writeFileSync(file, JSON.stringify(input));
      const child = spawn(process.execPath, ['--import', 'tsx', childScript, file], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        err += chunk.toString();
      });
      const ready = new Promise<void>((resolve, reject) => {
        const check = () => (out.includes('ready\n') ? resolve() : undefined);
        child.stdout.on('data', check);
        child.once('exit', (code) => reject(new Error(`replica ${r} exited with ${code} before it was ready: ${err}`)));
      });
      const result = new Promise<ChildResult>((resolve, reject) => {
        child.once('exit', (code) => {
          const line = out.split('\n').find((l) => l.startsWith('{'));
          if (code !== 0 || !line) reject(new Error(`replica ${r} exited with ${code}: ${err}`));
          else resolve(JSON.parse(line) as ChildResult);
        });
      });
      return { child, ready, result };
    });
    await Promise.all(children.map((c) => c.ready));
    for (const { child } of children) child.stdin.end('go\n');
    const results = await Promise.all(children.map((c) => c.result));
    const receipts = results.reduce((sum, r) => sum + r.applied, 0);
    const ms = Math.max(...results.map((r) => r.ms), 1);
    const last = new Map<string, number>();
    for (const r of results) for (const [jobId, seq] of Object.entries(r.last)) last.set(jobId, seq);
    return {
      figures: {
        replicas: options.replicas,
        receipts,
        seconds: Math.round(ms / 100) / 10,
        perSecond: Math.round((receipts * 1000) / ms),
        perReplica: results.map((r) => ({
          receipts: r.applied,
          perSecond: Math.round((r.applied * 1000) / Math.max(1, r.ms)),
          cpuUsPerReceipt: Math.round((r.cpuMs * 1000) / Math.max(1, r.applied)),
        })),
      },
      last,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
