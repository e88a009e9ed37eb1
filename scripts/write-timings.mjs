#!/usr/bin/env node
// Writes test/timings.json (seconds per test file) from a vitest JSON report, for test/harness/sequencer.ts:
// `node scripts/write-timings.mjs [REPORT]` (default: test/artifacts/vitest-report.json, which `pnpm test` writes).
// Run it after a full run on a CI-like machine and commit the file when the suite's shape has changed.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const [file = 'test/artifacts/vitest-report.json'] = process.argv.slice(2);
const report = JSON.parse(readFileSync(file, 'utf8'));
const files = Object.fromEntries(
  report.testResults
    .map((result) => [relative(process.cwd(), result.name), Math.round((result.endTime - result.startTime) / 100) / 10])
    .sort((a, b) => b[1] - a[1]),
);
const out = {
  note: 'Seconds per test file from the last full run (node scripts/write-timings.mjs). Read by test/harness/sequencer.ts to start the longest files first.',
  files,
};
writeFileSync('test/timings.json', `${JSON.stringify(out, null, 2)}\n`);
console.log(`wrote test/timings.json: ${Object.keys(files).length} files`);
