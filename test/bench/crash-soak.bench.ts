// The crash soaks (issue 23 item 10): the kill -9 suites at full length. CI runs each with 4 trials per store to
// stay inside its time; here they run with ARK_CRASH_TRIALS (default 10) through vitest, as CI runs them:
// test/e2e/idempotency-crash.test.ts (bursts of idempotent requests, each cut by SIGKILL, replays checked) and
// test/e2e/payouts-crash.test.ts (the payer killed after pinning and after broadcasting, paid once on chain).
// Figures: seconds per file and per trial. A failing trial fails the bench.
//
// Run: pnpm exec tsx test/bench/crash-soak.bench.ts [--trials 10]
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { repoRoot } from '../harness/bundles.js';

const FILES = ['test/e2e/idempotency-crash.test.ts', 'test/e2e/payouts-crash.test.ts'];

export interface CrashSoakFigures {
  trialsPerStore: number;
  files: Record<string, { seconds: number; secondsPerTrial: number }>;
}

function vitest(file: string, trials: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs'), 'run', file], {
      cwd: repoRoot,
      env: { ...process.env, ARK_CRASH_TRIALS: String(trials) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve((performance.now() - started) / 1000) : reject(new Error(`${file} failed with ${trials} trials (exit ${code})`)),
    );
  });
}

export async function run(options: { trials?: number } = {}): Promise<CrashSoakFigures> {
  const trials = options.trials ?? 10;
  const files: CrashSoakFigures['files'] = {};
  for (const file of FILES) {
    const seconds = await vitest(file, trials);
    // Two stores per file.
    files[file] = { seconds: Math.round(seconds), secondsPerTrial: Math.round((seconds / (2 * trials)) * 10) / 10 };
  }
  return { trialsPerStore: trials, files };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { trials: { type: 'string' } } });
  const figures = await run(values.trials === undefined ? {} : { trials: Number(values.trials) });
  console.log(JSON.stringify(figures, null, 2));
}
