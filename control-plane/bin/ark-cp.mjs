#!/usr/bin/env node
// Installed entry point: the compiled control plane (dist/main.mjs, rebuilt by scripts/bundle.mjs when a source changed),
// or its sources through tsx where no bundle can be built or ARK_FROM_SOURCE=1 is set (scripts/bundle.mjs runPackage).
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { runPackage } = await import(pathToFileURL(join(here, '..', '..', 'scripts', 'bundle.mjs')).href);
await runPackage('control-plane', 'ark-cp');
