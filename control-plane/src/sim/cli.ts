import { parseArgs } from 'node:util';
import type { Dialect } from '../store/db.js';
import { parseKnownDefects } from './known-defects.js';
import { DEFAULT_MAX_COMMANDS, simulate } from './simulate.js';

// `pnpm sim`: more sequences than CI runs, or one failing case replayed.
//   pnpm sim --seed 42 --runs 500 --store postgres
//   pnpm sim --known-defects none               check every invariant, fixed or not (how the defects were found)
//   pnpm sim --seed S --path P --replay-path R ...   replay the shrunk case a failure printed (its last line)
// Exits 1 when a sequence breaks an invariant (the report names it, with the shrunk sequence).

const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    runs: { type: 'string', default: '100' },
    store: { type: 'string', default: 'sqlite' },
    'max-commands': { type: 'string', default: String(DEFAULT_MAX_COMMANDS) },
    'known-defects': { type: 'string', default: 'all' },
    path: { type: 'string' },
    'replay-path': { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
});

const stores: Dialect[] = values.store === 'both' ? ['sqlite', 'postgres'] : [values.store as Dialect];
for (const store of stores)
  if (store !== 'sqlite' && store !== 'postgres') throw new Error(`--store is sqlite, postgres or both, not ${store}`);

let failed = false;
for (const dialect of stores) {
  const result = await simulate({
    dialect,
    runs: Number(values.runs),
    maxCommands: Number(values['max-commands']),
    knownDefects: parseKnownDefects(values['known-defects'] ?? 'all'),
    ...(values.seed !== undefined ? { seed: Number(values.seed) } : {}),
    ...(values.path !== undefined ? { path: values.path } : {}),
    ...(values['replay-path'] !== undefined ? { replayPath: values['replay-path'] } : {}),
    log: (line) => console.log(line),
    verbose: values.verbose,
  });
  console.log(
    `sim ${dialect}: ${result.failed ? 'FAILED' : 'passed'}: ${result.runs} sequences, seed ${result.seed}, ${result.seconds} s (${result.sequencesPerSecond} sequences/s)`,
  );
  if (!result.failed) console.log(`sim ${dialect}: coverage (sequences that reached it): ${JSON.stringify(result.coverage)}`);
  failed ||= result.failed;
}
process.exit(failed ? 1 : 0);
