#!/usr/bin/env node
// Installed entry point: loads the TypeScript sources through tsx in this same process, so signals (Ctrl-C during
// `ark jobs events --follow`) reach the CLI itself, and exit codes are the CLI's own.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { register } = await import(
  pathToFileURL(join(dirname(require.resolve('tsx/package.json')), 'dist', 'esm', 'api', 'index.mjs')).href
);
register();
await import(pathToFileURL(join(here, '..', 'src', 'main.ts')).href);
