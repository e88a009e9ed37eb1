// Runs every test/bench/*.bench.ts that exports `run()`, one after another, each bounded in time, and prints one
// summary table of all their figures. `pnpm bench` runs them all; `pnpm bench http ledger` only those whose file
// name contains one of the words. Exits 1 when a bench fails or runs out of time; a figure outside its budget is
// flagged in the table but does not fail the run (budgets are ratios meant for a quiet machine).
//
// Options: --timeout-s N  bound for each bench (default 600); --json  print the figures as JSON as well;
// --rounds N  handed to each bench's run() as `rounds` (those that repeat a measurement, e.g. readiness, take it).
import { readdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

interface BenchModule {
  run?: (options?: Record<string, unknown>) => Promise<unknown>;
}

interface Outcome {
  name: string;
  status: 'ok' | 'failed' | 'timed out' | 'no run()';
  seconds: number;
  figures?: unknown;
  error?: string;
}

const here = dirname(fileURLToPath(import.meta.url));

/** Bench files in this folder, sorted, optionally kept to those whose name contains one of `filters`. */
export function benchFiles(filters: string[] = []): string[] {
  return readdirSync(here)
    .filter((file) => file.endsWith('.bench.ts'))
    .filter((file) => filters.length === 0 || filters.some((f) => file.toLowerCase().includes(f.toLowerCase())))
    .sort()
    .map((file) => join(here, file));
}

/** Flattens nested figures into `path: value` rows (arrays by index). */
export function flatten(value: unknown, prefix = ''): Array<[string, string]> {
  if (value === null || value === undefined) return [[prefix || '(none)', String(value)]];
  if (typeof value !== 'object') return [[prefix || '(value)', typeof value === 'number' ? formatNumber(value) : String(value)]];
  return Object.entries(value as Record<string, unknown>).flatMap(([key, v]) => flatten(v, prefix ? `${prefix}.${key}` : key));
}

const formatNumber = (n: number): string => (Number.isInteger(n) ? n.toLocaleString('en-US') : String(Math.round(n * 1000) / 1000));

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length))) ?? [];
  const line = (row: string[]) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ');
  return [line(rows[0] ?? []), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

async function runOne(file: string, timeoutS: number, options: Record<string, unknown>): Promise<Outcome> {
  const name = basename(file, '.bench.ts');
  const started = performance.now();
  const seconds = () => Math.round((performance.now() - started) / 100) / 10;
  const module = (await import(pathToFileURL(file).href)) as BenchModule;
  if (typeof module.run !== 'function') return { name, status: 'no run()', seconds: 0 };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutS * 1000);
  });
  try {
    const result = await Promise.race([module.run(options), timeout]);
    if (result === 'timeout') return { name, status: 'timed out', seconds: seconds(), error: `no result within ${timeoutS} s` };
    return { name, status: 'ok', seconds: seconds(), figures: result };
  } catch (error) {
    return { name, status: 'failed', seconds: seconds(), error: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

export async function runAll(
  filters: string[],
  timeoutS: number,
  log: (line: string) => void,
  options: Record<string, unknown> = {},
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const file of benchFiles(filters)) {
    log(`bench: ${basename(file)} (load average ${loadavg()[0]?.toFixed(2)} on ${cpus().length} cores)`);
    const outcome = await runOne(file, timeoutS, options);
    log(`bench: ${outcome.name}: ${outcome.status} in ${outcome.seconds} s${outcome.error ? ` (${outcome.error})` : ''}`);
    outcomes.push(outcome);
  }
  return outcomes;
}

export function summary(outcomes: Outcome[]): string {
  const rows: string[][] = [['bench', 'figure', 'value']];
  for (const outcome of outcomes) {
    if (outcome.status !== 'ok') {
      rows.push([outcome.name, outcome.status, outcome.error ?? '']);
      continue;
    }
    for (const [path, value] of flatten(outcome.figures)) {
      // withinBudget.* booleans read better as a verdict.
      const verdict = /(^|\.)withinBudget($|\.)/.test(path) ? (value === 'true' ? 'within budget' : 'OVER BUDGET') : value;
      rows.push([outcome.name, path, verdict]);
    }
    rows.push([outcome.name, '(seconds)', String(outcome.seconds)]);
  }
  return table(rows);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { 'timeout-s': { type: 'string' }, json: { type: 'boolean' }, rounds: { type: 'string' } },
  });
  const timeoutS = Math.max(10, Math.min(Number(values['timeout-s'] ?? 600) || 600, 3600));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const files = benchFiles(positionals);
  if (files.length === 0) {
    log(
      `bench: no bench matches ${positionals.join(' ')}; there are: ${benchFiles()
        .map((f) => basename(f, '.bench.ts'))
        .join(', ')}`,
    );
    process.exit(2);
  }
  const outcomes = await runAll(positionals, timeoutS, log, values.rounds === undefined ? {} : { rounds: Number(values.rounds) });
  process.stdout.write(`\n${summary(outcomes)}\n`);
  if (values.json) process.stdout.write(`${JSON.stringify(outcomes, null, 2)}\n`);
  // A bench that timed out may still hold children or timers: leave without waiting for them.
  process.exit(outcomes.every((o) => o.status === 'ok' || o.status === 'no run()') ? 0 : 1);
}
