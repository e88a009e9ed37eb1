// The marketplace simulator's speed (issue 22): sequences per second on SQLite and on Postgres, each sequence a
// generated marketplace and up to 30 commands against the real services and store, the step invariants after every
// command, then the drain (every job stopped, finality, every account taking out everything) and the end invariants.
// The process's CPU time per sequence is printed beside it (on Postgres the server's own CPU is not in it): on a
// shared machine it moves less than the rate does.
//
// Run: pnpm exec tsx test/bench/sim.bench.ts [--runs 50] [--seed 22]
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { simulate } from '@ark/control-plane/sim/simulate';
import type { Dialect } from '@ark/control-plane/store/db';

export interface DialectSimFigures {
  sequences: number;
  seconds: number;
  sequencesPerSecond: number;
  /** This process's CPU time (user + system) per sequence. */
  processCpuMsPerSequence: number;
}

export interface SimBenchFigures {
  loadAvgBefore: number;
  seed: number;
  sqlite: DialectSimFigures;
  postgres: DialectSimFigures;
}

export async function run(options: { runs?: number; seed?: number } = {}): Promise<SimBenchFigures> {
  const runs = options.runs ?? 50;
  const seed = options.seed ?? 22;
  const loadAvgBefore = Math.round((loadavg()[0] ?? 0) * 100) / 100;
  const measure = async (dialect: Dialect): Promise<DialectSimFigures> => {
    const cpu = process.cpuUsage();
    const result = await simulate({ dialect, runs, seed });
    const used = process.cpuUsage(cpu);
    if (result.failed) throw new Error(`the simulator failed on ${dialect}:\n${result.report}`);
    return {
      sequences: result.runs,
      seconds: result.seconds,
      sequencesPerSecond: result.sequencesPerSecond,
      processCpuMsPerSequence: Math.round((used.user + used.system) / 1000 / Math.max(1, result.runs)),
    };
  };
  return { loadAvgBefore, seed, sqlite: await measure('sqlite'), postgres: await measure('postgres') };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { runs: { type: 'string' }, seed: { type: 'string' } } });
  const figures = await run({
    ...(values.runs ? { runs: Number(values.runs) } : {}),
    ...(values.seed ? { seed: Number(values.seed) } : {}),
  });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
