// Test images without any public registry: a rootfs made from Debian's static busybox, loaded
// with `docker import`, pushed to Debian's `docker-registry` on 127.0.0.1 so it can be pulled by
// digest exactly as a host agent pulls a job image.
import { randomBytes } from 'node:crypto';
import { chmod, copyFile, cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { type DockerDaemon, findExecutable, harnessPath } from './dockerd.js';
import { freePort, runCommand, spawnProcess, waitFor } from './processes.js';

export interface TestRegistry {
  /** `127.0.0.1:<port>`: the prefix of image names pushed here. */
  address: string;
  port: number;
  pid: number;
  directory: string;
  output(): string;
  stop(): Promise<void>;
}

export interface StartRegistryOptions {
  startTimeoutMs?: number;
}

const registryStartAttempts = 3;

/**
 * Starts Debian's registry (distribution 2.8) on a free loopback port with filesystem storage.
 * dockerd treats 127.0.0.0/8 registries as insecure by default, so plain HTTP works.
 */
export async function startRegistry(options: StartRegistryOptions = {}): Promise<TestRegistry> {
  const binary = findExecutable('docker-registry');
  if (binary === undefined) {
    throw new Error('docker-registry is not installed (Debian package docker-registry)');
  }
  const directory = await mkdtemp(join(tmpdir(), 'ark-registry-'));
  let lastError: unknown;
  // The free port can be taken between probing and binding; try a few.
  for (let attempt = 0; attempt < registryStartAttempts; attempt += 1) {
    const port = await freePort();
    const configFile = join(directory, 'config.yml');
    await writeFile(configFile, registryConfig(join(directory, 'data'), port));
    const child = spawnProcess(binary, ['serve', configFile], { env: { PATH: harnessPath } });
    try {
      const state = await waitFor(
        async () => {
          if (!child.isRunning()) return 'exited';
          return (await httpStatus(`http://127.0.0.1:${port}/v2/`)) === 200 ? 'ready' : false;
        },
        {
          timeoutMs: options.startTimeoutMs ?? 20_000,
          intervalMs: 50,
          description: `docker-registry on 127.0.0.1:${port}`,
        },
      );
      if (state === 'exited') throw new Error(`docker-registry exited:\n${child.output()}`);
    } catch (error) {
      lastError = error;
      await child.stop('SIGKILL');
      continue;
    }
    let stopped: Promise<void> | undefined;
    return {
      address: `127.0.0.1:${port}`,
      port,
      pid: child.pid,
      directory,
      output: child.output,
      stop: () => {
        stopped ??= (async () => {
          await child.stop('SIGTERM', { timeoutMs: 5_000 });
          await rm(directory, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  }
  await rm(directory, { recursive: true, force: true });
  throw lastError instanceof Error ? lastError : new Error('docker-registry did not start');
}

function registryConfig(storageDirectory: string, port: number): string {
  // JSON is valid YAML, and spares us a YAML writer.
  return `${JSON.stringify(
    {
      version: 0.1,
      log: { level: 'warn', accesslog: { disabled: true } },
      storage: { filesystem: { rootdirectory: storageDirectory }, delete: { enabled: true } },
      // A fixed secret silences the "no HTTP secret" warning; uploads never span instances here.
      http: { addr: `127.0.0.1:${port}`, secret: randomBytes(16).toString('hex') },
    },
    null,
    2,
  )}\n`;
}

function httpStatus(url: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'GET', timeout: 2_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

export interface BusyboxRootfsOptions {
  /** Extra files, by absolute path inside the image, e.g. `{ '/www/index.html': 'ok' }`. */
  files?: Record<string, string | { content: string; mode: number }>;
  /** Host files copied in, by absolute path inside the image (mode kept), e.g. `{ '/bin/node': process.execPath }`. */
  copies?: Record<string, string>;
  /**
   * Host directories copied in whole, by absolute path inside the image, symlinks kept as they are (so a pnpm
   * `node_modules/.pnpm` layout keeps working); paths under `source` matching an `exclude` pattern are left out.
   */
  trees?: Record<string, { source: string; exclude?: readonly RegExp[] }>;
  /** Symlinks, by absolute path inside the image, to their target (relative or absolute, as given). */
  symlinks?: Record<string, string>;
}

/**
 * Writes a tarball of a minimal rootfs: /bin/busybox with a relative symlink per applet (sh,
 * echo, sleep, httpd, nc, wget, ...), /sbin and /usr/bin pointing at /bin, and a root user.
 * Returns the tarball's path inside `workDirectory`.
 */
export async function buildBusyboxRootfs(workDirectory: string, options: BusyboxRootfsOptions = {}): Promise<string> {
  const busybox = findExecutable('busybox', ['/usr/bin/busybox', '/bin/busybox']);
  if (busybox === undefined) throw new Error('busybox is not installed (Debian package busybox-static)');
  const root = join(workDirectory, 'rootfs');
  for (const directory of ['bin', 'etc', 'root', 'usr', 'var/www', 'dev', 'proc', 'sys']) {
    await mkdir(join(root, directory), { recursive: true });
  }
  await mkdir(join(root, 'tmp'), { recursive: true });
  await chmod(join(root, 'tmp'), 0o1777);
  await copyFile(busybox, join(root, 'bin/busybox'));
  await chmod(join(root, 'bin/busybox'), 0o755);
  // `busybox --install -s` would link to the host's absolute busybox path; relative links keep
  // the rootfs self-contained.
  const { stdout } = await runCommand(busybox, ['--list']);
  for (const applet of stdout.split('\n').map((line) => line.trim())) {
    if (applet === '' || applet === 'busybox' || applet.includes('/')) continue;
    await symlink('busybox', join(root, 'bin', applet));
  }
  await symlink('bin', join(root, 'sbin'));
  await symlink('../bin', join(root, 'usr/bin'));
  await symlink('../bin', join(root, 'usr/sbin'));
  await writeFile(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
  await writeFile(join(root, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  for (const [path, file] of Object.entries(options.files ?? {})) {
    const target = join(root, path);
    await mkdir(dirname(target), { recursive: true });
    const content = typeof file === 'string' ? file : file.content;
    await writeFile(target, content);
    if (typeof file !== 'string') await chmod(target, file.mode);
  }
  for (const [path, source] of Object.entries(options.copies ?? {})) {
    const target = join(root, path);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(source, target);
  }
  for (const [path, tree] of Object.entries(options.trees ?? {})) {
    const exclude = tree.exclude ?? [];
    await cp(tree.source, join(root, path), {
      recursive: true,
      verbatimSymlinks: true,
      filter: (source) => !exclude.some((pattern) => pattern.test(source.slice(tree.source.length))),
    });
  }
  for (const [path, target] of Object.entries(options.symlinks ?? {})) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await symlink(target, join(root, path));
  }
  const tarball = join(workDirectory, 'rootfs.tar');
  await runCommand('tar', ['--numeric-owner', '--owner=0', '--group=0', '-C', root, '-cf', tarball, '.'], {
    env: { PATH: harnessPath },
  });
  return tarball;
}

export interface BuildTestImageOptions extends BusyboxRootfsOptions {
  /** Repository without registry, e.g. `ark-test/busybox`. */
  repository?: string;
  tag?: string;
  /** Dockerfile instructions applied by `docker import --change`, e.g. `CMD ["httpd", "-f"]`. */
  changes?: readonly string[];
  /** Push to this registry; without it a new one is started (and stopped by its own stop()). */
  registry?: TestRegistry;
}

export interface TestImage {
  /** The local name given at import, e.g. `ark-test/busybox:1`. */
  localRef: string;
  /** The pushed tag, e.g. `127.0.0.1:5123/ark-test/busybox:1`. */
  ref: string;
  /** `127.0.0.1:<port>/ark-test/busybox@sha256:...`, what the agent pulls. */
  digestRef: string;
  /** The manifest digest, `sha256:...`. */
  digest: string;
  /** The local image ID (config digest), which differs from the manifest digest. */
  imageId: string;
  registry: TestRegistry;
}

const defaultChanges = ['CMD ["/bin/sh"]', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'WORKDIR /'];

/**
 * Builds the busybox image in `daemon`, pushes it to a loopback registry and returns its digest
 * reference. The image stays in the daemon under both tags; `docker rmi` them to test a pull.
 */
export async function buildTestImage(daemon: DockerDaemon, options: BuildTestImageOptions = {}): Promise<TestImage> {
  const repository = options.repository ?? 'ark-test/busybox';
  const tag = options.tag ?? '1';
  const localRef = `${repository}:${tag}`;
  const workDirectory = await mkdtemp(join(tmpdir(), 'ark-image-'));
  const ownRegistry = options.registry === undefined;
  const registry = options.registry ?? (await startRegistry());
  try {
    const tarball = await buildBusyboxRootfs(workDirectory, options);
    const changes = options.changes ?? defaultChanges;
    const { stdout: imported } = await daemon.docker(['import', ...changes.flatMap((change) => ['--change', change]), tarball, localRef]);
    const imageId = imported.trim();
    const ref = `${registry.address}/${localRef}`;
    await daemon.docker(['tag', localRef, ref]);
    await daemon.docker(['push', ref]);
    const { stdout: digests } = await daemon.docker(['image', 'inspect', '--format', '{{json .RepoDigests}}', ref]);
    const digestRef = (JSON.parse(digests) as string[]).find((entry) => entry.startsWith(`${registry.address}/${repository}@sha256:`));
    if (digestRef === undefined) throw new Error(`push of ${ref} recorded no digest: ${digests}`);
    const digest = digestRef.slice(digestRef.indexOf('@') + 1);
    return { localRef, ref, digestRef, digest, imageId, registry };
  } catch (error) {
    if (ownRegistry) await registry.stop();
    throw error;
  } finally {
    await rm(workDirectory, { recursive: true, force: true });
  }
}
