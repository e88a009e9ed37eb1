#!/usr/bin/env node
// Installed entry point: the MCP server on stdio (ARK_URL, ARK_API_KEY), loading its TypeScript sources through
// tsx in this same process, so the client that spawned it talks to this process's stdin and stdout directly.
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
