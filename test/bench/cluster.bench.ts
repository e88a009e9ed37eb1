// The cluster bank test's long form (issue 26): three `ark-cp serve` replicas behind HAProxy on a private PostgreSQL
// (test/cluster), a real agent, deposit-funded renters reserving, extending and stopping jobs through the load
// balancer only, while ARK_CLUSTER_ROUNDS rounds (default 2) of every fault kind run on a seeded schedule; then every
// invariant. Prints the seed, the faults injected, the requests made and each invariant's result.
// Run: pnpm bench cluster   (ARK_CLUSTER_SEED=<seed> replays a schedule; more rounds need --timeout-s)
import { pathToFileURL } from 'node:url';
import { type BankReport, runBank } from '../cluster/bank.js';
import buildBundles from '../harness/global-setup.js';

export interface ClusterBenchFigures {
  seed: number;
  faults: string[];
  requests: number;
  retries: number;
  idempotentMutations: number;
  answers: Record<string, number>;
  jobs: number;
  deposits: number;
  invariants: Record<string, string>;
  allInvariantsHold: boolean;
}

export async function run(options: { rounds?: number; seed?: number } = {}): Promise<ClusterBenchFigures> {
  const seed = options.seed ?? (process.env.ARK_CLUSTER_SEED === undefined ? undefined : Number(process.env.ARK_CLUSTER_SEED));
  const rounds = options.rounds ?? Number(process.env.ARK_CLUSTER_ROUNDS ?? 2);
  // The replicas and the agent run the bundles: rebuild whichever is stale, as vitest's global setup does.
  await buildBundles();
  const report: BankReport = await runBank({
    seed,
    rounds,
    renters: 3,
    simJobLoops: 4,
    log: (line) => process.stderr.write(`[cluster] ${line}\n`),
  });
  return {
    seed: report.seed,
    faults: report.faults.map((f) => `${f.kind}: ${f.note}`),
    requests: report.requests,
    retries: report.retries,
    idempotentMutations: report.mutations,
    answers: report.statuses,
    jobs: report.jobs,
    deposits: report.deposits,
    invariants: Object.fromEntries(report.invariants.map((i) => [i.name, `${i.ok ? 'ok' : 'BROKEN'}: ${i.detail}`])),
    allInvariantsHold: report.invariants.every((i) => i.ok),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await run();
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  process.exit(figures.allInvariantsHold ? 0 : 1);
}
