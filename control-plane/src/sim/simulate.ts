import fc from 'fast-check';
import type { Dialect } from '../store/db.js';
import { COMMANDS, POPULATION, type Population, populate, type SimCommand } from './commands.js';
import { drain } from './drain.js';
import { InvariantViolation } from './invariants.js';
import { type DefectKey, KNOWN_DEFECTS } from './known-defects.js';
import { SimModel } from './model.js';
import { type RunStores, runStores } from './stores.js';
import { World } from './world.js';

// The marketplace simulator (issue 22), in the spirit of TigerBeetle's VOPR and Jepsen's bank test: fast-check
// generates a starting marketplace and a sequence of commands from a seed, runs them against the real services and
// store with a simulated chain and agents, checks the step invariants after every command, then drains the
// marketplace and checks that every account can take out everything it owns. A failure is shrunk to a shortest
// sequence and printed with its seed, one command a line.

export interface SimulationOptions {
  dialect: Dialect;
  /** fast-check's seed; a random one when absent (printed either way). */
  seed?: number;
  runs: number;
  /** Stop starting new sequences after this long (CI's budget); what ran is reported. */
  timeLimitMs?: number;
  /** The longest command sequence generated (the setup before it and the drain after it come on top). */
  maxCommands?: number;
  /** Defects whose invariants are skipped; default known-defects.ts's list. */
  knownDefects?: ReadonlySet<DefectKey>;
  /** fast-check's replay path, printed with a failure: with the seed, runs that one case at once. */
  path?: string;
  /** The commands' own replay path (which commands ran), printed with a failure beside `path`. */
  replayPath?: string;
  /** Progress lines (one per hundred sequences) and the failure report. */
  log?: (line: string) => void;
  /** Log every passing sequence's trace too. */
  verbose?: boolean;
}

export interface SimulationResult {
  dialect: Dialect;
  seed: number;
  /** Sequences run (fewer than asked when the time limit stopped them; shrinking runs not counted). */
  runs: number;
  failed: boolean;
  /** The invariant a failure broke, its shrunk sequence one command a line, and how to replay it. */
  report: string | null;
  /** The known defect the failure's invariant belongs to, if it is one. */
  defect: DefectKey | null;
  seconds: number;
  sequencesPerSecond: number;
  /** How many passing sequences reached each situation: what the runs exercised. */
  coverage: Record<string, number>;
}

export const DEFAULT_MAX_COMMANDS = 30;

/** One sequence on a fresh database: setup, the commands (step invariants after each), the drain and the end invariants. */
export async function runSequence(input: {
  stores: RunStores;
  population: Population;
  commands: Iterable<SimCommand | fc.AsyncCommand<SimModel, World>>;
  knownDefects: ReadonlySet<DefectKey>;
  /** Receives the model (its trace) before anything runs, so a failure's trace can be printed. */
  onModel?: (model: SimModel) => void;
  /** Called with the world after the drain passed, before it is closed. */
  after?: (model: SimModel, world: World) => Promise<void>;
}): Promise<void> {
  const store = await input.stores.fresh();
  const world = new World(store, 0);
  const model = new SimModel(0, input.knownDefects);
  input.onModel?.(model);
  try {
    // The server starts before anyone signs up: its workers take their first step (the deposit watcher's cursor
    // starts at the finalized block it sees then).
    await world.workers();
    await model.createAdmin(world);
    await populate(model, world, input.population);
    await fc.asyncModelRun(() => ({ model, real: world }), input.commands as Iterable<fc.AsyncCommand<SimModel, World>>);
    await drain(model, world);
    await input.after?.(model, world);
  } finally {
    await world.close();
    await input.stores.release(store);
  }
}

export async function simulate(options: SimulationOptions): Promise<SimulationResult> {
  const known = options.knownDefects ?? KNOWN_DEFECTS;
  const maxCommands = options.maxCommands ?? DEFAULT_MAX_COMMANDS;
  const seed = options.seed ?? (Date.now() ^ (Math.random() * 0x100000000)) | 0;
  const stores = await runStores(options.dialect);
  const traces = new WeakMap<object, string[]>();
  const coverage: Record<string, number> = {};
  let executed = 0;
  const started = performance.now();
  const generated = fc.commands(COMMANDS, {
    maxCommands,
    size: 'max',
    ...(options.replayPath ? { replayPath: options.replayPath } : {}),
  });
  const property = fc.asyncProperty(POPULATION, generated, async (population, commands) => {
    executed++;
    if (executed % 100 === 0) options.log?.(`sim ${options.dialect}: ${executed} sequences`);
    await runSequence({
      stores,
      population,
      commands,
      knownDefects: known,
      onModel: (model) => traces.set(commands, model.trace),
      after: async (model, world) => {
        if (options.verbose) options.log?.(['sequence:', ...model.trace.map((l) => `  ${l}`)].join('\n'));
        await countCoverage(coverage, model, world);
      },
    });
  });
  let details: fc.RunDetails<[Population, Iterable<fc.AsyncCommand<SimModel, World>>]>;
  try {
    details = await fc.check(property, {
      seed,
      numRuns: options.runs,
      ...(options.path ? { path: options.path } : {}),
      ...(options.timeLimitMs ? { interruptAfterTimeLimit: options.timeLimitMs, markInterruptAsFailure: false } : {}),
    });
  } finally {
    await stores.close();
  }
  const seconds = (performance.now() - started) / 1000;
  const failed = details.failed && !details.interrupted;
  const error = details.errorInstance;
  const result: SimulationResult = {
    dialect: options.dialect,
    seed,
    runs: details.numRuns,
    failed,
    report: null,
    defect: error instanceof InvariantViolation ? error.defect : null,
    seconds: Math.round(seconds * 10) / 10,
    sequencesPerSecond: Math.round((executed / seconds) * 100) / 100,
    coverage,
  };
  if (failed) {
    const commands = details.counterexample?.[1];
    const trace = (commands && traces.get(commands as object)) ?? [];
    // The commands' string ends with fast-check's own replay hint: which of them ran.
    const replayPath = /replayPath="([^"]*)"/.exec(String(commands))?.[1] ?? null;
    result.report = report(options.dialect, details, known, maxCommands, trace, replayPath);
    options.log?.(result.report);
  }
  return result;
}

function report(
  dialect: Dialect,
  details: { seed: number; counterexamplePath: string | null; numRuns: number; numShrinks: number; errorInstance: unknown },
  known: ReadonlySet<DefectKey>,
  maxCommands: number,
  trace: string[],
  replayPath: string | null,
): string {
  const error = details.errorInstance;
  const knownFlag = [...known].join(',') || 'none';
  return [
    `marketplace simulator FAILED on ${dialect} (seed ${details.seed}, ${details.numRuns} sequences, ${details.numShrinks} shrinks)`,
    error instanceof InvariantViolation
      ? `invariant: ${error.message}`
      : `error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    `known defects skipped: ${knownFlag}`,
    'shrunk sequence, one command a line (-> what came of it), then the drain:',
    ...compress(trace).map((line, i) => `  ${String(i + 1).padStart(3)}. ${line}`),
    `replay: pnpm sim --store ${dialect} --seed ${details.seed} --path "${details.counterexamplePath}"` +
      `${replayPath ? ` --replay-path "${replayPath}"` : ''} --max-commands ${maxCommands} --known-defects ${knownFlag}`,
  ].join('\n');
}

/** Repeated drain ticks become one line with a count. */
function compress(trace: string[]): string[] {
  const out: string[] = [];
  let last = '';
  let count = 0;
  const flush = () => {
    if (count > 1) out[out.length - 1] = `${out[out.length - 1]} (x${count})`;
  };
  for (const line of trace) {
    const key = line.replace(/ -> block \d+, final \d+$/, '');
    if (key === last && line.startsWith('drain:')) {
      count++;
      continue;
    }
    flush();
    out.push(line.startsWith('drain:') ? key : line);
    last = key;
    count = 1;
  }
  flush();
  return out;
}

/** Counts what one passing sequence reached, read from the store and the chain after its drain. */
async function countCoverage(coverage: Record<string, number>, model: SimModel, world: World): Promise<void> {
  const db = world.store.db;
  const count = (key: string, reached: boolean) => {
    if (reached) coverage[key] = (coverage[key] ?? 0) + 1;
  };
  const jobs = await db.selectFrom('jobs').select(['cumulative_charge_micro', 'fence']).execute();
  const requests = await db.selectFrom('withdrawals').select(['kind', 'state', 'failure_reason']).execute();
  const deposits = await db.selectFrom('chain_deposits').select(['state', 'reason']).execute();
  const topUps = await db.selectFrom('x402_intents').select('state').execute();
  count(
    'a job charged',
    jobs.some((j) => j.cumulative_charge_micro > 0n),
  );
  count(
    'a job rebound after its agent vanished',
    jobs.some((j) => j.fence > 1n),
  );
  count(
    'a payout paid',
    requests.some((r) => r.kind === 'payout' && r.state === 'CONFIRMED'),
  );
  count(
    'a withdrawal paid',
    requests.some((r) => r.kind === 'withdrawal' && r.state === 'CONFIRMED'),
  );
  count(
    'a request rejected',
    requests.some((r) => r.failure_reason === 'rejected'),
  );
  count(
    'a renter-role account hosted',
    model.machines.some((m) => model.users[m.ownerIndex]?.role !== 'host'),
  );
  count(
    'a wallet agent signed up',
    model.users.some((u) => u.kind === 'agent'),
  );
  count(
    'a deposit credited',
    deposits.some((d) => d.state === 'CREDITED'),
  );
  count(
    'a deposit held',
    deposits.some((d) => d.state === 'HELD'),
  );
  count(
    'a deposit below the minimum',
    deposits.some((d) => d.state === 'BELOW_MINIMUM'),
  );
  count(
    'a held deposit refunded',
    deposits.some((d) => d.state === 'REFUNDED'),
  );
  count(
    'a held deposit credited by an operator',
    deposits.some((d) => d.reason === 'operator_override'),
  );
  count(
    'a top-up credited',
    topUps.some((t) => t.state === 'CONFIRMED'),
  );
  count('a crash', world.starts > 1);
  count(
    'admissions paused',
    model.trace.some((l) => l.startsWith('pauseAdmissions')),
  );
  count(
    'a reorg',
    model.trace.some((l) => /^reorg.*-> [12] block/.test(l)),
  );
}
