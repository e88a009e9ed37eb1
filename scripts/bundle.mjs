#!/usr/bin/env node
// Builds the control plane (`ark-cp`) and the CLI (`ark`) from their TypeScript sources into one ES module each,
// <package>/dist/main.mjs, with the esbuild that tsx already brings (about a second each). Our own workspace sources
// (@ark/shared, @ark/mcp, the package itself) are bundled; every npm dependency stays external and is loaded from
// node_modules as Node would, each import rewritten to the absolute file esbuild resolves for it (pnpm keeps a
// package's dependencies beside it, not in the importing package's node_modules), so nothing that reads its own
// files at run time (native modules, swagger-ui's static assets, pino's workers) moves.
//
// Why a bundle and not `tsc` output: one file loads without a TypeScript loader and with far fewer module
// records: `ark-cp --help` spends about a third of the CPU it spent through tsx. The agent has its own bundler
// (host-agent/scripts/bundle.mjs: a relocatable single file for the installer, with lazily loaded chunks).
//
// A bundle is rebuilt when any source it was built from changed (a content hash kept beside it), so a run from a
// fresh clone builds once and later runs reuse it. `node scripts/bundle.mjs [control-plane|cli ...]` builds now;
// bin/ark-cp.mjs and bin/ark.mjs call ensureBundle() on start.
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** What each bundled package is built from; `assets` are copied beside the bundle (read at run time by path). */
export const PACKAGES = {
  'control-plane': {
    entry: 'control-plane/src/main.ts',
    sources: ['control-plane/src', 'shared/src', 'mcp/src'],
    // The console finds them beside its own module (console/index.ts); it is loaded only through `serve`'s
    // dynamic import, so it always sits in a chunk under dist/chunks/.
    assets: [
      ['control-plane/src/console/assets', 'control-plane/dist/chunks/assets'],
      ['control-plane/src/console/views', 'control-plane/dist/chunks/views'],
    ],
  },
  cli: { entry: 'cli/src/main.ts', sources: ['cli/src', 'shared/src', 'mcp/src'], assets: [] },
};

export function bundlePath(name) {
  return join(repoRoot, name, 'dist', 'main.mjs');
}

function sourceFiles(spec) {
  const files = [];
  for (const root of spec.sources) {
    for (const entry of readdirSync(join(repoRoot, root), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || entry.name.endsWith('.test.ts')) continue;
      files.push(join(entry.parentPath ?? entry.path, entry.name));
    }
  }
  return files.sort();
}

/** A hash of every file the bundle is built from, this script and the lockfile included. */
export function sourceHash(name) {
  const spec = PACKAGES[name];
  const hash = createHash('sha256');
  for (const file of [...sourceFiles(spec), fileURLToPath(import.meta.url), join(repoRoot, 'pnpm-lock.yaml')]) {
    hash.update(relative(repoRoot, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

function stampPath(name) {
  return join(repoRoot, name, 'dist', '.source-hash');
}

/** True when the bundle exists and was built from the sources as they are now. */
export function bundleIsFresh(name) {
  try {
    return existsSync(bundlePath(name)) && readFileSync(stampPath(name), 'utf8').trim() === sourceHash(name);
  } catch {
    return false;
  }
}

async function loadEsbuild() {
  const requireFromTsx = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
  return import(pathToFileURL(requireFromTsx.resolve('esbuild')).href);
}

/** npm packages stay external, imported by the absolute path of the file esbuild resolves (see the header). */
const externalDependencies = {
  name: 'ark-external-dependencies',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData?.resolving || args.path.startsWith('@ark/')) return undefined;
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: { resolving: true },
      });
      if (resolved.errors.length > 0) return { errors: resolved.errors };
      return { path: resolved.path, external: true };
    });
  },
};

/** Builds one package's bundle into a temporary folder and renames it into place, so a concurrent start never sees half of it. */
export async function bundle(name) {
  const spec = PACKAGES[name];
  if (spec === undefined) throw new Error(`unknown package ${name}; one of ${Object.keys(PACKAGES).join(', ')}`);
  const hash = sourceHash(name);
  const esbuild = await loadEsbuild();
  const outdir = join(repoRoot, name, 'dist');
  const temporary = join(outdir, `.build-${randomBytes(6).toString('hex')}`);
  mkdirSync(temporary, { recursive: true });
  try {
    await esbuild.build({
      entryPoints: { main: join(repoRoot, spec.entry) },
      outdir: temporary,
      outExtension: { '.js': '.mjs' },
      // Each dynamic import() of ours becomes a chunk that loads its own npm imports only when first imported:
      // without splitting, esbuild hoists every external import to the top of the one file, so `ark-cp --help`
      // would load the HTTP server, the chain clients and the workers before printing a line.
      splitting: true,
      chunkNames: 'chunks/[name]-[hash]',
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      sourcemap: 'linked',
      plugins: [externalDependencies],
      logLevel: 'error',
      legalComments: 'none',
    });
    for (const [from, to] of spec.assets) cpSync(join(repoRoot, from), join(repoRoot, to), { recursive: true });
    // Chunks are named by content hash and moved in first, the entry last, so a running process's chunks stay put.
    const chunks = join(temporary, 'chunks');
    if (existsSync(chunks)) {
      mkdirSync(join(outdir, 'chunks'), { recursive: true });
      for (const file of readdirSync(chunks)) renameSync(join(chunks, file), join(outdir, 'chunks', file));
    }
    renameSync(join(temporary, 'main.mjs.map'), join(outdir, 'main.mjs.map'));
    renameSync(join(temporary, 'main.mjs'), bundlePath(name));
    writeFileSync(stampPath(name), `${hash}\n`);
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
  return bundlePath(name);
}

/** The bundle's path, built first when it is missing or stale. */
export async function ensureBundle(name) {
  if (!bundleIsFresh(name)) await bundle(name);
  return bundlePath(name);
}

/**
 * What bin/ark-cp.mjs and bin/ark.mjs run: the package's bundle (built first when stale), in this same process so
 * signals and exit codes are the command's own. Where no bundle can be built (no esbuild) or ARK_FROM_SOURCE=1 is
 * set, the sources run through tsx instead: same behaviour, slower start.
 */
export async function runPackage(name, command) {
  let entry;
  if (process.env.ARK_FROM_SOURCE !== '1') {
    try {
      entry = await ensureBundle(name);
    } catch (error) {
      process.stderr.write(
        `${command}: no usable build (${error instanceof Error ? error.message.split('\n')[0] : error}); running the sources through tsx\n`,
      );
    }
  }
  if (entry === undefined) {
    const require = createRequire(import.meta.url);
    const { register } = await import(
      pathToFileURL(join(dirname(require.resolve('tsx/package.json')), 'dist', 'esm', 'api', 'index.mjs')).href
    );
    register();
    entry = join(repoRoot, PACKAGES[name].entry);
  }
  await import(pathToFileURL(entry).href);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const names = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(PACKAGES);
  for (const name of names) {
    const started = performance.now();
    const path = await bundle(name);
    process.stdout.write(`bundled ${name} into ${relative(repoRoot, path)} in ${Math.round(performance.now() - started)} ms\n`);
  }
}
