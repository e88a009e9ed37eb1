#!/usr/bin/env node
// Bundles the agent (its sources, @ark/shared and the pure-JS dependencies) into an ES module,
// host-agent/dist/ark-agent.mjs, and the chunks it imports lazily (host-agent/dist/chunks/), with the esbuild that
// tsx already brings. The daemon then runs on plain Node:
// no loader thread and far fewer module records, which is what keeps its idle RSS near a bare `node`
// (tsx's loader alone costs about as much again as a bare process). Run by the installer, or by
// bin/ark-agent.mjs on first use when the bundle is missing or older than a source file.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = join(packageDir, '..');
export const BUNDLE_PATH = join(packageDir, 'dist', 'ark-agent.mjs');

// Native or optional modules stay outside the bundle and are loaded from node_modules as usual.
const EXTERNAL = ['bufferutil', 'utf-8-validate', 'cpu-features', 'ssh2', 'dockerode', 'node-nvidia-smi', 'prom-client', '*.node'];
// These are imported only by modules the agent loads on first use (the Docker client, the job SSH server, the
// metrics exporter). esbuild hoists an external `import` to the top of the bundle, which would load them at
// start; through a CommonJS shim they become a `require()` inside the lazily initialised module instead.
const LAZY_EXTERNAL = /^(ssh2|dockerode|prom-client)$/;

const lazyExternals = {
  name: 'ark-lazy-externals',
  setup(build) {
    build.onResolve({ filter: LAZY_EXTERNAL }, (args) =>
      args.kind === 'require-call' ? undefined : { path: args.path, namespace: 'ark-lazy-external' },
    );
    build.onLoad({ filter: /.*/, namespace: 'ark-lazy-external' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

function newestSourceMtimeMs() {
  let newest = 0;
  const roots = [join(packageDir, 'src'), join(repoRoot, 'shared', 'src')];
  for (const root of roots) {
    for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
      newest = Math.max(newest, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
    }
  }
  return Math.max(newest, statSync(join(packageDir, 'package.json')).mtimeMs, statSync(fileURLToPath(import.meta.url)).mtimeMs);
}

/** True when the bundle exists and no source is newer than it. */
export function bundleIsFresh(outfile = BUNDLE_PATH) {
  try {
    return statSync(outfile).mtimeMs >= newestSourceMtimeMs();
  } catch {
    return false;
  }
}

/**
 * Builds the bundle: the entry (dist/ark-agent.mjs) and, with code splitting, one chunk per module the agent
 * imports dynamically (pairing, the Docker runtime, the job SSH server, the metrics exporter, ...) under
 * dist/chunks/, read from disk only when first imported. Everything is built into a temporary directory; chunks
 * are named by content hash and moved in first, the entry is renamed into place last, so concurrent starts never
 * see half a bundle and a running agent's chunks stay where it expects them.
 */
export async function bundleAgent(outfile = BUNDLE_PATH) {
  const requireFromTsx = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
  const esbuild = await import(pathToFileURL(requireFromTsx.resolve('esbuild')).href);
  const outdir = dirname(outfile);
  const entryName = basename(outfile, '.mjs');
  const temporary = join(outdir, `.build-${randomBytes(6).toString('hex')}`);
  mkdirSync(temporary, { recursive: true });
  try {
    await esbuild.build({
      entryPoints: { [entryName]: join(packageDir, 'src', 'main.ts') },
      outdir: temporary,
      outExtension: { '.js': '.mjs' },
      chunkNames: 'chunks/[name]-[hash]',
      splitting: true,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      external: EXTERNAL,
      plugins: [lazyExternals],
      // CommonJS dependencies call require(); an ES module has none of its own.
      banner: {
        js: "import { createRequire as __arkCreateRequire } from 'node:module'; const require = __arkCreateRequire(import.meta.url);",
      },
      logLevel: 'error',
      legalComments: 'none',
    });
    const chunks = join(temporary, 'chunks');
    if (existsSync(chunks)) {
      mkdirSync(join(outdir, 'chunks'), { recursive: true });
      for (const name of readdirSync(chunks)) renameSync(join(chunks, name), join(outdir, 'chunks', name));
    }
    renameSync(join(temporary, `${entryName}.mjs`), outfile);
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
  return outfile;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const outfile = await bundleAgent();
  process.stdout.write(`bundled the agent into ${outfile}\n`);
}
