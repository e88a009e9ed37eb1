#!/usr/bin/env node
// Prints the slowest test files of a vitest JSON report: `node scripts/slowest-files.mjs REPORT [N]`.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const [file, count = '15'] = process.argv.slice(2);
const report = JSON.parse(readFileSync(file, 'utf8'));
const files = report.testResults
  .map((result) => ({
    name: relative(process.cwd(), result.name),
    seconds: (result.endTime - result.startTime) / 1000,
    tests: result.assertionResults.length,
    status: result.status,
  }))
  .sort((a, b) => b.seconds - a.seconds);
const total = files.reduce((sum, f) => sum + f.seconds, 0);
console.log(`slowest ${count} of ${files.length} files (${Math.round(total)} s of file time in all):`);
for (const f of files.slice(0, Number(count))) {
  console.log(
    `${f.seconds.toFixed(1).padStart(7)} s  ${String(f.tests).padStart(3)} tests  ${f.status === 'passed' ? '' : `${f.status}  `}${f.name}`,
  );
}
