// The npm packages as a user installs them: scripts/pack.mjs builds ark-cli and ark-agent tarballs, `npm install -g`
// puts them into a fresh prefix with no registry (--offline: each tarball carries all it imports), and the installed
// commands run from outside the workspace, against a started control plane.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../harness/processes.js';
import { type ControlPlane, controlPlaneCli, repoRoot, startControlPlane } from './host-side-helpers.js';

interface Packer {
  pack(name: string, outDir: string): Promise<string>;
}

const PASSWORD = 'a long enough password for the package test';

/** Runs an installed command from a folder outside the workspace, so nothing resolves from its node_modules. */
function installed(prefix: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const cwd = mkdtempSync(join(tmpdir(), 'ark-pkg-cwd-'));
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      join(prefix, 'bin', command),
      args,
      {
        cwd,
        env: { ...process.env, ARK_API_KEY: '', ARK_PASSWORD: '', ARK_URL: '', NODE_PATH: '', ...env },
        timeout: 30_000,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
    );
  });
}

describe('the packed CLI and agent, installed with npm into a fresh prefix', () => {
  let prefix: string;
  let tarballs: string[];
  let cp: ControlPlane;

  beforeAll(async () => {
    const packer = (await import(pathToFileURL(join(repoRoot, 'scripts', 'pack.mjs')).href)) as Packer;
    const outDir = mkdtempSync(join(tmpdir(), 'ark-packs-'));
    [tarballs, cp] = await Promise.all([Promise.all([packer.pack('cli', outDir), packer.pack('host-agent', outDir)]), startControlPlane()]);
    prefix = mkdtempSync(join(tmpdir(), 'ark-prefix-'));
    // --offline: no registry is reachable here, and a package that needed one would fail now, not on a user's machine.
    await runCommand('npm', ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', ...tarballs], {
      cwd: outDir,
      env: { npm_config_update_notifier: 'false', npm_config_cache: join(outDir, '.npm-cache') },
      timeoutMs: 120_000,
    });
  }, 180_000);

  afterAll(async () => {
    await cp?.process.stop('SIGTERM');
  });

  it('names each package and its command, and carries no dependency to fetch', () => {
    for (const [tarball, name, command] of [
      [tarballs[0], 'ark-cli', 'ark'],
      [tarballs[1], 'ark-agent', 'ark-agent'],
    ] as const) {
      expect(tarball).toMatch(new RegExp(`${name}-\\d+\\.\\d+\\.\\d+\\.tgz$`));
      const manifest = JSON.parse(readFileSync(join(prefix, 'lib', 'node_modules', name, 'package.json'), 'utf8'));
      expect(manifest).toMatchObject({ name, bin: { [command]: `dist/${command}.mjs` }, engines: { node: '>=20' } });
      expect(manifest.dependencies ?? {}).toEqual({});
    }
  });

  it('ark --help and ark-agent --help answer from the installed files', async () => {
    const ark = await installed(prefix, 'ark', ['--help']);
    expect(ark.code, ark.stderr).toBe(0);
    expect(ark.stdout).toContain('Usage: ark');
    for (const command of ['offers', 'jobs', 'ssh', 'machines']) expect(ark.stdout).toContain(command);
    const agent = await installed(prefix, 'ark-agent', ['--help']);
    expect(agent.code, agent.stderr).toBe(0);
    expect(agent.stdout).toContain('Usage: ark-agent <command>');
    expect(agent.stdout).toContain('pair --control-plane URL');
  });

  it('the installed ark signs in to a started control plane and answers whoami', async () => {
    const email = `pkg-${Date.now()}@example.test`;
    await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'renter', '--password', PASSWORD, '--verified']);
    const env = { ARK_URL: cp.base, ARK_CONFIG_DIR: mkdtempSync(join(tmpdir(), 'ark-pkg-config-')) };
    const login = await installed(prefix, 'ark', ['login', '--email', email, '--json'], { ...env, ARK_PASSWORD: PASSWORD });
    expect(login.code, login.stderr).toBe(0);
    expect(JSON.parse(login.stdout)).toMatchObject({ logged_in: true, email, role: 'renter' });
    const whoami = await installed(prefix, 'ark', ['whoami', '--json'], env);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(JSON.parse(whoami.stdout)).toMatchObject({ email, role: 'renter', auth_method: 'api-key' });
  });

  it('the installed agent reads its config and state and reports an unpaired machine', async () => {
    const state = mkdtempSync(join(tmpdir(), 'ark-pkg-agent-'));
    writeFileSync(join(state, 'config.json'), '{}\n');
    const status = await installed(prefix, 'ark-agent', ['status', '--json'], {
      ARK_AGENT_STATE_DIR: state,
      ARK_AGENT_CONFIG: join(state, 'config.json'),
    });
    // Exit 1: not paired (host-agent/README.md "status").
    expect(status.code, status.stderr).toBe(1);
    expect(JSON.parse(status.stdout)).toMatchObject({ paired: false, state_dir: state, machine_id: null, daemon: { running: false } });
  });
  it('the host installer installs the agent package: wrapper, unit and example config, no workspace and no pnpm', async () => {
    const destdir = mkdtempSync(join(tmpdir(), 'ark-pkg-destdir-'));
    const install = await runCommand('sh', [join(repoRoot, 'deploy', 'host-agent', 'install.sh'), tarballs[1] as string], {
      cwd: tmpdir(),
      env: { DESTDIR: destdir, npm_config_cache: join(destdir, '.npm-cache') },
      timeoutMs: 60_000,
    });
    expect(install.stdout).toContain('installing ark-agent-');
    const wrapper = readFileSync(join(destdir, 'usr', 'local', 'bin', 'ark-agent'), 'utf8');
    expect(wrapper).toContain('"/opt/ark-agent/lib/node_modules/ark-agent/dist/ark-agent.mjs"');
    expect(readFileSync(join(destdir, 'etc', 'systemd', 'system', 'ark-agent.service'), 'utf8')).toContain(
      'ExecStart=/usr/local/bin/ark-agent run',
    );
    expect(JSON.parse(readFileSync(join(destdir, 'etc', 'ark-agent', 'config.json'), 'utf8'))).toBeTypeOf('object');
    // The staged copy runs on its own (the wrapper names its final place, /opt, which staging leaves alone).
    const state = mkdtempSync(join(tmpdir(), 'ark-pkg-agent-'));
    const status = await installed(join(destdir, 'opt', 'ark-agent'), 'ark-agent', ['status', '--json'], {
      ARK_AGENT_STATE_DIR: state,
      ARK_AGENT_CONFIG: join(destdir, 'etc', 'ark-agent', 'config.json'),
    });
    expect(JSON.parse(status.stdout)).toMatchObject({ paired: false, state_dir: state });
  });
});
