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
    // Two cores on CI: end-to-end files start real processes, so keep files from piling up.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
