#!/usr/bin/env node
// Installed entry point. Runs the compiled control plane (dist/main.mjs, built by scripts/bundle.mjs when it is
// missing or older than its sources) on plain Node, in this same process, so signals and exit codes are ark-cp's
// own. Where it cannot be built (no esbuild) or ARK_FROM_SOURCE=1 is set, it loads src/main.ts through tsx instead.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
let entry;
if (process.env.ARK_FROM_SOURCE !== '1') {
  try {
    const { ensureBundle } = await import(pathToFileURL(join(here, '..', '..', 'scripts', 'bundle.mjs')).href);
    entry = await ensureBundle('control-plane');
  } catch (error) {
    process.stderr.write(
      `ark-cp: no usable build (${error instanceof Error ? error.message.split('\n')[0] : error}); running the sources through tsx\n`,
    );
  }
}
if (entry === undefined) {
  const require = createRequire(import.meta.url);
  const { register } = await import(
    pathToFileURL(join(dirname(require.resolve('tsx/package.json')), 'dist', 'esm', 'api', 'index.mjs')).href
  );
  register();
  entry = join(here, '..', 'src', 'main.ts');
}
await import(pathToFileURL(entry).href);
