import type { ReadinessVerifier } from '../services/jobs/index.js';
import type { Worker } from './runner.js';

// Verified readiness as a worker (issue 24 item 1): every second, the jobs reported ready that are due (a retry's
// wait passed, a claim ran out because its replica died, or a control plane restarted with jobs waiting) are taken
// and verified. A fresh report does not wait for it: the gateway wakes the verifier once the report commits
// (gateway/handlers-table.ts), and a report that found no free slot is taken when an attempt ends. Verification itself
// is bounded (services/jobs/readiness.ts), so a step is too.

export const READINESS_WORKER_INTERVAL_MS = 1_000;

export function readinessWorker(readiness: ReadinessVerifier): Worker {
  return { name: 'job-readiness', intervalMs: READINESS_WORKER_INTERVAL_MS, step: (_store, now) => readiness.verifyDue(now) };
}
