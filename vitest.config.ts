import { defineConfig } from 'vitest/config';
import LongestFirstSequencer from './test/harness/sequencer.js';

const forks = Number(process.env.ARK_TEST_FORKS ?? 3);

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
    // Longest files first, by the last full run's durations (test/timings.json), so the forks end together.
    sequence: { sequencer: LongestFirstSequencer },
    pool: 'forks',
    // Three forks on CI's two cores (ARK_TEST_FORKS overrides): the end-to-end files spend most of their time waiting on
    // the processes they start (timers, docker, the chain), so a third fork fills idle time. Same machine, same hour:
    // 2 forks 1,335 s of vitest (2,202 s of file time), 3 forks 1,046 s (2,553 s of file time: each file runs slower, the
    // run ends sooner). An earlier session measured no gain from a third fork; with two, the CPU sat half idle.
    // Forks keep their modules between files (isolate: false). A fresh process per file imported the control plane
    // once per file; keeping modules cut the unit files from 589 s to 336 s, and full runs took 1,203-2,019 s of vitest
    // against about 2,200 s isolated. So every file leaves the process as it found it: servers closed, children
    // stopped, env restored.
    // As many forks at the start as at most: with fewer, tinypool stops a fork that falls idle and may hand it a file
    // as it stops, and the run fails with "Terminating worker thread" with that file never run (seen with three).
    poolOptions: { forks: { maxForks: forks, minForks: forks, isolate: false } },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
