import { readFileSync, statSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Orders test files longest first, by the durations a full run measured (test/timings.json, written by
 * `pnpm test:timings` from the last run's report), so the forks finish together instead of one running a
 * three-minute end-to-end file alone at the end (longest-processing-time-first scheduling). A fresh clone has no
 * vitest cache, so without this file vitest falls back to ordering by file size, which puts some slow suites last.
 * A file the timings do not know is estimated: an end-to-end file as a typical one, any other by its size.
 */
const TIMINGS_FILE = resolve(import.meta.dirname, '../timings.json');
const UNKNOWN_E2E_SECONDS = 60;

function readTimings(): Record<string, number> {
  try {
    const parsed = JSON.parse(readFileSync(TIMINGS_FILE, 'utf8')) as { files?: Record<string, number> };
    return parsed.files ?? {};
  } catch {
    return {};
  }
}

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const timings = readTimings();
    const root = this.ctx.config.root;
    const estimate = (spec: TestSpecification): number => {
      const path = relative(root, spec.moduleId);
      const known = timings[path];
      if (known !== undefined) return known;
      if (path.startsWith('test/e2e/')) return UNKNOWN_E2E_SECONDS;
      try {
        // About a second per 10 kB of test source: unit files are small and fast.
        return statSync(spec.moduleId).size / 10_000;
      } catch {
        return 0;
      }
    };
    return files
      .map((spec) => ({ spec, seconds: estimate(spec) }))
      .sort((a, b) => b.seconds - a.seconds)
      .map(({ spec }) => spec);
  }
}
