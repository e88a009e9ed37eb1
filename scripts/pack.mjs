#!/usr/bin/env node
// Builds the npm packages users install: `node scripts/pack.mjs [cli|host-agent ...] [--out DIR]` writes
// ark-cli-<version>.tgz and ark-agent-<version>.tgz (default DIR: dist-pack/) and prints their paths.
//
// Each tarball holds one self-contained ES module: our sources, @ark/shared, @ark/mcp and every pure-JavaScript
// npm dependency bundled by esbuild, so `npm install -g ark-cli-<version>.tgz` needs no registry and no workspace,
// and the command starts without a TypeScript loader. Only native addons stay out (ssh2's optional crypto binding
// and cpu-features, ws's optional bufferutil and utf-8-validate): each is loaded inside a try and has a pure-JS
// fallback, so the agent runs without them, a little slower at SSH ciphers.
//
// The development bundles (scripts/bundle.mjs, host-agent/scripts/bundle.mjs) differ on purpose: they keep npm
// dependencies external and load them from the workspace's node_modules, which is faster to build and what tests
// spawn; a package must instead carry what it imports.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/** What each package is: its entry, its command, and the package.json fields a user's npm sees. */
export const PACKS = {
  cli: {
    entry: 'cli/src/main.ts',
    manifest: 'cli/package.json',
    name: 'ark-cli',
    command: 'ark',
    description: 'Ark: rent GPU machines by the hour from a terminal (jobs, SSH, billing, the MCP server).',
  },
  'host-agent': {
    entry: 'host-agent/src/main.ts',
    manifest: 'host-agent/package.json',
    name: 'ark-agent',
    command: 'ark-agent',
    description: 'Ark host agent: lists a GPU rig on the Ark marketplace and runs renters\u2019 jobs through Docker.',
    // What deploy/host-agent/install.sh installs beside the agent when given this package.
    extras: [
      ['deploy/host-agent/config.example.json', 'deploy/config.example.json'],
      ['deploy/host-agent/ark-agent.service', 'deploy/ark-agent.service'],
    ],
  },
};

// Native addons (and their loaders) stay out; every one is optional at run time (see the header).
const EXTERNAL = ['*.node', 'cpu-features', 'bufferutil', 'utf-8-validate'];

async function loadEsbuild() {
  const requireFromTsx = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
  return import(pathToFileURL(requireFromTsx.resolve('esbuild')).href);
}

/** Builds one package's tarball into `outDir`; returns its path. */
export async function pack(name, outDir = join(repoRoot, 'dist-pack')) {
  const spec = PACKS[name];
  if (spec === undefined) throw new Error(`unknown package ${name}; one of ${Object.keys(PACKS).join(', ')}`);
  const version = JSON.parse(readFileSync(join(repoRoot, spec.manifest), 'utf8')).version;
  const esbuild = await loadEsbuild();
  const staging = mkdtempSync(join(tmpdir(), `ark-pack-${name}-`));
  try {
    const main = join(staging, 'dist', `${spec.command}.mjs`);
    await esbuild.build({
      entryPoints: [join(repoRoot, spec.entry)],
      outfile: main,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      external: EXTERNAL,
      // CommonJS dependencies call require() and read __dirname; an ES module has neither of its own.
      banner: {
        js: [
          '#!/usr/bin/env node',
          "import { createRequire as __arkCreateRequire } from 'node:module';",
          "import { dirname as __arkDirname } from 'node:path';",
          "import { fileURLToPath as __arkFileURLToPath } from 'node:url';",
          'const require = __arkCreateRequire(import.meta.url);',
          'const __filename = __arkFileURLToPath(import.meta.url);',
          'const __dirname = __arkDirname(__filename);',
        ].join('\n'),
      },
      // The entry checks it is the main module by comparing paths; keep names readable in stack traces.
      keepNames: true,
      logLevel: 'error',
      legalComments: 'none',
    });
    chmodSync(main, 0o755);
    writeFileSync(
      join(staging, 'package.json'),
      `${JSON.stringify(
        {
          name: spec.name,
          version,
          description: spec.description,
          type: 'module',
          bin: { [spec.command]: `dist/${spec.command}.mjs` },
          files: ['dist', ...(spec.extras ? ['deploy'] : [])],
          engines: { node: '>=20' },
          license: 'UNLICENSED',
        },
        null,
        2,
      )}\n`,
    );
    cpSync(join(repoRoot, name, 'README.md'), join(staging, 'README.md'));
    for (const [from, to] of spec.extras ?? []) cpSync(join(repoRoot, from), join(staging, to));
    mkdirSync(outDir, { recursive: true });
    const output = execFileSync('npm', ['pack', '--silent', '--pack-destination', resolve(outDir)], {
      cwd: staging,
      encoding: 'utf8',
      env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' },
    });
    return join(resolve(outDir), output.trim().split('\n').pop());
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const names = [];
  let outDir;
  for (let i = 2; i < process.argv.length; i++) {
    if (process.argv[i] === '--out') outDir = process.argv[++i];
    else names.push(process.argv[i]);
  }
  for (const name of names.length > 0 ? names : Object.keys(PACKS)) {
    const started = performance.now();
    const tarball = await pack(name, outDir);
    process.stdout.write(`packed ${name} into ${tarball} in ${Math.round(performance.now() - started)} ms\n`);
  }
}
