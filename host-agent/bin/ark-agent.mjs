#!/usr/bin/env node
// Installed entry point. Runs the bundled agent (dist/ark-agent.mjs, built from the sources on first use or by
// the installer) on plain Node, in this same process, so the daemon receives SIGTERM itself and carries no
// TypeScript loader. Where the bundle cannot be built (read-only install, no esbuild) or
// ARK_AGENT_FROM_SOURCE=1 is set, it loads src/main.ts through tsx instead: same behaviour, more memory.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

async function bundled() {
  const { BUNDLE_PATH, bundleAgent, bundleIsFresh } = await import(pathToFileURL(join(here, '..', 'scripts', 'bundle.mjs')).href);
  if (!bundleIsFresh(BUNDLE_PATH)) await bundleAgent(BUNDLE_PATH);
  return BUNDLE_PATH;
}

let entry;
if (process.env.ARK_AGENT_FROM_SOURCE !== '1') {
  try {
    entry = await bundled();
  } catch (error) {
    if (process.argv[2] === 'run') {
      process.stderr.write(
        `ark-agent: no usable bundle (${error instanceof Error ? error.message.split('\n')[0] : error}); running the sources through tsx\n`,
      );
    }
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
