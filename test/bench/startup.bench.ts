// How long the commands people type take to answer `--help`, against `node -e 0` started the same way: `ark` and
// `ark-agent` as npm installs them (scripts/pack.mjs tarballs in a fresh prefix), `ark` and `ark-cp` as the
// workspace runs them (their bins: the compiled bundle, rebuilt when a source changed). Runs are interleaved, so
// a noisy neighbour slows all of them alike, and the median of each is compared. Budget (issue 25): at most 3x
// a bare node.
// Run: pnpm exec tsx test/bench/startup.bench.ts [--runs 11]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { repoRoot } from '../harness/bundles.js';

export interface StartupFigures {
  runs: number;
  medianMs: Record<string, number>;
  ratioToNode: Record<string, number>;
  budgetRatioMax: number;
  withinBudget: Record<string, boolean>;
}

export interface StartupOptions {
  runs?: number;
  log?: (line: string) => void;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

function wallMs(command: string, args: string[], cwd: string): number {
  const started = performance.now();
  const result = spawnSync(command, args, {
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ARK_URL: '', ARK_API_KEY: '' },
  });
  const ms = performance.now() - started;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

export async function run(options: StartupOptions = {}): Promise<StartupFigures> {
  const runs = options.runs ?? 11;
  const work = mkdtempSync(join(tmpdir(), 'ark-bench-startup-'));
  try {
    const { pack } = (await import(pathToFileURL(join(repoRoot, 'scripts', 'pack.mjs')).href)) as {
      pack(name: string, outDir: string): Promise<string>;
    };
    const prefix = join(work, 'prefix');
    const tarballs = [await pack('cli', work), await pack('host-agent', work)];
    execFileSync('npm', ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', ...tarballs], {
      cwd: work,
      stdio: 'ignore',
      env: { ...process.env, npm_config_update_notifier: 'false', npm_config_cache: join(work, '.npm-cache') },
    });
    // The workspace bins build their bundle when stale: once here, outside the timed runs.
    for (const bin of ['cli/bin/ark.mjs', 'control-plane/bin/ark-cp.mjs']) wallMs(process.execPath, [join(repoRoot, bin), '--help'], work);

    const commands: Record<string, [string, string[]]> = {
      node: [process.execPath, ['-e', '0']],
      'ark --help (installed)': [join(prefix, 'bin', 'ark'), ['--help']],
      'ark-agent --help (installed)': [join(prefix, 'bin', 'ark-agent'), ['--help']],
      'ark --help (workspace)': [process.execPath, [join(repoRoot, 'cli', 'bin', 'ark.mjs'), '--help']],
      'ark-cp --help (workspace)': [process.execPath, [join(repoRoot, 'control-plane', 'bin', 'ark-cp.mjs'), '--help']],
    };
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
    // One warm-up round (file cache), then interleaved rounds.
    for (let round = 0; round <= runs; round++) {
      for (const [name, [command, args]] of Object.entries(commands)) {
        const ms = wallMs(command, args, work);
        if (round > 0) samples[name]?.push(ms);
      }
    }
    const medianMs = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, Math.round(median(values))]));
    const nodeMs = medianMs.node ?? Number.NaN;
    const ratioToNode = Object.fromEntries(
      Object.entries(medianMs)
        .filter(([name]) => name !== 'node')
        .map(([name, ms]) => [name, Math.round((ms / nodeMs) * 100) / 100]),
    );
    const budgetRatioMax = 3;
    const figures: StartupFigures = {
      runs,
      medianMs,
      ratioToNode,
      budgetRatioMax,
      withinBudget: Object.fromEntries(Object.entries(ratioToNode).map(([name, ratio]) => [name, ratio <= budgetRatioMax])),
    };
    for (const [name, ratio] of Object.entries(ratioToNode)) {
      options.log?.(`${name}: ${medianMs[name]} ms median = ${ratio}x node -e 0 (${nodeMs} ms; budget <= ${budgetRatioMax}x)`);
    }
    return figures;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { runs: { type: 'string' } } });
  const figures = await run({ runs: values.runs ? Number(values.runs) : undefined, log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
