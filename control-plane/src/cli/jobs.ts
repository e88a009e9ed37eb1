import { UUID_PATTERN } from '@ark/shared';
import { systemClock } from '../clock.js';
import { jobView } from '../domain/jobs/job.js';
import { openConfiguredStore } from '../runtime.js';
import type { Store } from '../store/db.js';
import { jobSettingsOf } from '../store/job-lifecycle.js';
import { findJob } from '../store/jobs.js';
import { jobSweeps } from '../workers/jobs.js';
import { registerCliCommands } from './index.js';

// Operator commands for jobs: run the sweeps once (what `serve` runs every few seconds), and show a job.

export interface SweepReport {
  funding: number;
  liveness: number;
  start_timeout: number;
  retrieval: number;
  quotes: number;
}

/** `jobs sweep`: every job sweep once at `now`; how many jobs (or quotes) each moved. */
export async function sweepCommand(store: Store, settings: ReturnType<typeof jobSettingsOf>, now: Date): Promise<SweepReport> {
  const steps = jobSweeps(settings);
  return {
    funding: await steps.funding(store, now),
    liveness: await steps.liveness(store, now),
    start_timeout: await steps.startTimeout(store, now),
    retrieval: await steps.retrieval(store, now),
    quotes: await steps.quotes(store, now),
  };
}

registerCliCommands([
  {
    name: 'jobs sweep',
    usage: 'jobs sweep    (stop jobs past funding, reconcile silent machines, cancel stuck launches, clean after retrieval)',
    options: {},
    async run(_values, ctx) {
      const store = await openConfiguredStore(ctx.config);
      try {
        const report = await sweepCommand(store, jobSettingsOf(ctx.config), systemClock.now());
        process.stdout.write(`${JSON.stringify(report)}\n`);
        return 0;
      } finally {
        await store.close();
      }
    },
  },
  {
    name: 'jobs show',
    usage: 'jobs show --id <job uuid>',
    options: { id: { type: 'string' } },
    async run(values, ctx) {
      const id = typeof values.id === 'string' ? values.id : '';
      if (!UUID_PATTERN.test(id)) {
        process.stderr.write('ark-cp jobs show: --id must be a job UUID\n');
        return 2;
      }
      const store = await openConfiguredStore(ctx.config);
      try {
        const job = await findJob(store.db, id);
        if (!job) {
          process.stderr.write(`ark-cp jobs show: no job ${id}\n`);
          return 1;
        }
        const view = jobView(job, systemClock.now());
        process.stdout.write(
          `${JSON.stringify({ ...view, renter_account_id: job.accountId, host_account_id: job.hostAccountId }, null, 2)}\n`,
        );
        return 0;
      } finally {
        await store.close();
      }
    },
  },
]);
