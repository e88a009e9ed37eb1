import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/harness/sequencer.js';

export default defineConfig({
  test: {
    include: [
      'shared/src/**/*.test.ts',
      'control-plane/src/**/*.test.ts',
      'host-agent/src/**/*.test.ts',
      'cli/src/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    exclude: ['**/node_modules/**', 'test/bench/**'],
    // Builds the bundles the suites start as processes (ark-cp, ark, ark-agent) once, before any file runs.
    globalSetup: ['test/harness/global-setup.ts'],
    // Longest files first, by the last full run's durations (test/timings.json), so both forks end together.
    sequence: { sequencer: LongestFirstSequencer },
    pool: 'forks',
    // Two cores on CI: end-to-end files start real processes, so keep files from piling up (three forks kept both
    // cores busy and made no run faster: each file just ran slower). ARK_TEST_FORKS overrides.
    // Forks keep their modules between files (isolate: false). A fresh process per file imported the control plane
    // once per file; keeping modules cut the unit files from 589 s to 336 s, and full runs took 1,203-2,019 s of vitest
    // against about 2,200 s isolated. So every file leaves the process as it found it: servers closed, children
    // stopped, env restored.
    poolOptions: { forks: { maxForks: Number(process.env.ARK_TEST_FORKS ?? 2), minForks: 1, isolate: false } },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
