import { UUID_PATTERN } from '@ark/shared/limits';
import type { JobSweeps } from '../services/jobs/index.js';
import { operatorJobView } from '../views/jobs.js';
import { type CliCommand, printJson } from './context.js';

// Operator commands for jobs: run the sweeps once (what `serve` runs every few seconds), and show a job. Both go
// through the job services the CLI builds over the configured store, the same use cases `serve` runs.

export interface SweepReport {
  funding: number;
  liveness: number;
  start_timeout: number;
  retrieval: number;
  quotes: number;
}

/** `jobs sweep`: every job sweep once at `now`; how many jobs (or quotes) each moved. */
export async function sweepCommand(sweeps: JobSweeps, now: Date): Promise<SweepReport> {
  return {
    funding: await sweeps.funding(now),
    liveness: await sweeps.liveness(now),
    start_timeout: await sweeps.startTimeout(now),
    retrieval: await sweeps.retrieval(now),
    quotes: await sweeps.quotes(now),
  };
}

export const jobCommands: CliCommand[] = [
  {
    name: 'jobs sweep',
    usage: 'jobs sweep    (stop jobs past funding, reconcile silent machines, cancel stuck launches, clean after retrieval)',
    options: {},
    async run(_values, ctx) {
      const report = await sweepCommand(ctx.services.jobs.sweeps, ctx.clock.now());
      ctx.out(`${JSON.stringify(report)}\n`);
      return 0;
    },
  },
  {
    name: 'jobs show',
    usage: 'jobs show --id <job uuid>',
    options: { id: { type: 'string' } },
    async run(values, ctx) {
      const id = typeof values.id === 'string' ? values.id : '';
      if (!UUID_PATTERN.test(id)) {
        ctx.err('ark-cp jobs show: --id must be a job UUID\n');
        return 2;
      }
      const job = await ctx.services.jobs.reads.find(id);
      if (!job) {
        ctx.err(`ark-cp jobs show: no job ${id}\n`);
        return 1;
      }
      printJson(ctx, operatorJobView(job, ctx.clock.now()));
      return 0;
    },
  },
];
