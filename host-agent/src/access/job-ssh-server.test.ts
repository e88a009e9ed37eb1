// The SSH listener with real ssh2 clients over loopback. Commands run through a local process
// standing in for `docker exec` (the one-function ExecuteInContainer port); the Docker-backed path,
// ptys included, is proven in test/e2e/agent-runtime.test.ts.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, type ClientChannel, type SFTPWrapper, utils } from 'ssh2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { canBind } from '../runtime/port-allocator.js';
import { fingerprintOf, generateHostKey, type HostKey, loadOrCreateHostKey } from './host-key.js';
import { type ExecuteInContainer, JobSshServer } from './job-ssh-server.js';

// ed25519 keys from our own generator: ssh2's keygen occasionally writes a malformed one.
const renterKey = generateHostKey();
const renter = { private: renterKey.privateKey, public: renterKey.publicKey };
const strangerKey = generateHostKey();
const stranger = { private: strangerKey.privateKey, public: strangerKey.publicKey };
const renterRsa = utils.generateKeyPairSync('rsa', { bits: 2048 });

const localExec: ExecuteInContainer = async (request) => {
  const [command = '/bin/sh', ...args] = request.command;
  const child = spawn(command, args, {
    stdio: 'pipe',
    env: { PATH: process.env.PATH, ...Object.fromEntries((request.env ?? []).map((entry) => entry.split('=', 2))) },
  });
  return {
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    resize: async () => undefined,
    exited: new Promise((resolve) => child.once('close', (code) => resolve(code ?? undefined))),
    close: () => child.kill(),
  };
};

async function freeLoopbackPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = 41000 + Math.floor(Math.random() * 2000);
    if (await canBind(port, '127.0.0.1')) return port;
  }
  throw new Error('no free port');
}

type Connected = { client: Client; hostKeyFingerprint: string };

function connect(port: number, privateKey: string): Promise<Connected> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    let hostKeyFingerprint = '';
    client.once('ready', () => resolve({ client, hostKeyFingerprint }));
    client.once('error', reject);
    client.connect({
      host: '127.0.0.1',
      port,
      username: 'root',
      privateKey,
      readyTimeout: 10_000,
      hostVerifier: (key: Buffer) => {
        hostKeyFingerprint = fingerprintOf(key);
        return true;
      },
    });
  });
}

function execute(client: Client, command: string, input?: string): Promise<{ stdout: string; stderr: string; code: number | undefined }> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error: Error | undefined, channel: ClientChannel) => {
      if (error) {
        reject(error);
        return;
      }
      let stdout = '';
      let stderr = '';
      let code: number | undefined;
      channel.on('data', (data: Buffer) => {
        stdout += data.toString();
      });
      channel.stderr.on('data', (data: Buffer) => {
        stderr += data.toString();
      });
      channel.on('exit', (exitCode: number) => {
        code = exitCode;
      });
      channel.on('close', () => resolve({ stdout, stderr, code }));
      if (input !== undefined) channel.end(input);
    });
  });
}

function openSftp(client: Client): Promise<SFTPWrapper> {
  return new Promise((resolve, reject) => client.sftp((error, sftp) => (error ? reject(error) : resolve(sftp))));
}

function sftpCall<T>(run: (callback: (error: (Error & { code?: number }) | undefined | null, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => run((error, value) => (error ? reject(error) : resolve(value as T))));
}

describe('JobSshServer', () => {
  let hostKey: HostKey;
  let server: JobSshServer | undefined;
  let directory: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    hostKey = generateHostKey();
    directory = await mkdtemp(join(tmpdir(), 'ark-ssh-'));
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.end();
    await server?.close();
    server = undefined;
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  async function startServer(mode: ConstructorParameters<typeof JobSshServer>[0]['mode']): Promise<JobSshServer> {
    const port = await freeLoopbackPort();
    server = new JobSshServer({
      jobId: '00000000-0000-4000-8000-000000000001',
      hostKey,
      authorizedKeys: ['not a key', `${renter.public} renter@laptop`, renterRsa.public],
      host: '127.0.0.1',
      port,
      mode,
    });
    await server.listen();
    return server;
  }

  async function login(port: number, privateKey = renter.private): Promise<Connected> {
    const connected = await connect(port, privateKey);
    clients.push(connected.client);
    return connected;
  }

  it('runs a command for the renter key, streaming output and the exit status, and shows its host key', async () => {
    const listener = await startServer({ kind: 'execution', exec: localExec });
    const { client, hostKeyFingerprint } = await login(listener.port);
    expect(hostKeyFingerprint).toBe(hostKey.fingerprint);
    expect(hostKey.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    expect(await execute(client, 'echo hello')).toEqual({ stdout: 'hello\n', stderr: '', code: 0 });
    expect(await execute(client, 'echo oops >&2; exit 3')).toEqual({ stdout: '', stderr: 'oops\n', code: 3 });
    expect(await execute(client, 'tr a-z A-Z', 'piped input')).toEqual({ stdout: 'PIPED INPUT', stderr: '', code: 0 });
  });

  it('accepts an RSA renter key signed with rsa-sha2', async () => {
    const listener = await startServer({ kind: 'execution', exec: localExec });
    const { client } = await login(listener.port, renterRsa.private);
    expect((await execute(client, 'echo rsa')).stdout).toBe('rsa\n');
  });

  it('refuses a key that is not the renter', async () => {
    const listener = await startServer({ kind: 'execution', exec: localExec });
    await expect(connect(listener.port, stranger.private)).rejects.toThrow(/authentication methods failed/);
  });

  it('refuses a signature made by another key for a renter public key', async () => {
    const listener = await startServer({ kind: 'execution', exec: localExec });
    // The client offers the renter's public key but signs with a stranger's private key.
    const forged = utils.parseKey(stranger.private);
    const real = utils.parseKey(renter.public);
    if (forged instanceof Error || real instanceof Error) throw new Error('key parse');
    const client = new Client();
    clients.push(client);
    const outcome = new Promise<string>((resolve) => {
      client.once('ready', () => resolve('ready'));
      client.once('error', (error) => resolve(error.message));
    });
    client.connect({
      host: '127.0.0.1',
      port: listener.port,
      username: 'root',
      readyTimeout: 10_000,
      authHandler: (methodsLeft, _partial, next) => {
        if (methodsLeft === null || methodsLeft.includes('publickey')) {
          const impostor = Object.create(real) as typeof real;
          impostor.sign = (data: Buffer | string, algo?: string) => forged.sign(data, algo);
          impostor.isPrivateKey = () => true;
          next({ type: 'publickey', username: 'root', key: impostor } as never);
          return;
        }
        next(false as never);
      },
    });
    expect(await outcome).toMatch(/authentication methods failed/);
  });

  it('offers no SFTP while executing and no commands while retrieving', async () => {
    const listener = await startServer({ kind: 'execution', exec: localExec });
    const first = await login(listener.port);
    await expect(openSftp(first.client)).rejects.toThrow();
    listener.setMode({ kind: 'retrieval', root: directory });
    const second = await login(listener.port);
    await expect(execute(second.client, 'echo no')).rejects.toThrow();
  });

  it('closes connections opened under the previous mode', async () => {
    const listener = await startServer({ kind: 'execution', exec: localExec });
    const { client } = await login(listener.port);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    listener.setMode({ kind: 'closed' });
    await closed;
    await expect(connect(listener.port, renter.private)).rejects.toThrow(/authentication methods failed/);
  });

  describe('read-only SFTP', () => {
    let root: string;
    let outside: string;

    beforeAll(async () => {
      root = join(directory, 'volume');
      outside = join(directory, 'secret.txt');
      await mkdir(join(root, 'results'), { recursive: true });
      await writeFile(join(root, 'results/model.txt'), 'weights\n');
      await writeFile(join(root, 'big.bin'), Buffer.alloc(200_000, 7));
      await writeFile(outside, 'host secret');
      await symlink(outside, join(root, 'escape'));
      await symlink('results/model.txt', join(root, 'inside-link'));
    });

    it('reads files and lists directories', async () => {
      const listener = await startServer({ kind: 'retrieval', root });
      const sftp = await openSftp((await login(listener.port)).client);
      const content = await sftpCall<Buffer>((callback) => sftp.readFile('/results/model.txt', callback));
      expect(content.toString()).toBe('weights\n');
      const big = await sftpCall<Buffer>((callback) => sftp.readFile('big.bin', callback));
      expect(big.equals(Buffer.alloc(200_000, 7))).toBe(true);
      const linked = await sftpCall<Buffer>((callback) => sftp.readFile('/inside-link', callback));
      expect(linked.toString()).toBe('weights\n');
      const names = await sftpCall<Array<{ filename: string }>>((callback) => sftp.readdir('/', callback));
      expect(names.map((entry) => entry.filename).sort()).toEqual(['big.bin', 'escape', 'inside-link', 'results']);
      const stats = await sftpCall<{ size: number; isFile(): boolean }>((callback) => sftp.stat('/results/model.txt', callback));
      expect(stats.size).toBe(8);
      expect(await sftpCall<string>((callback) => sftp.realpath('.', callback))).toBe('/');
      expect(await sftpCall<string>((callback) => sftp.realpath('/results/../results/./model.txt', callback))).toBe('/results/model.txt');
      const downloaded = join(directory, 'downloaded.txt');
      await sftpCall<void>((callback) => sftp.fastGet('/results/model.txt', downloaded, callback));
      expect(await readFile(downloaded, 'utf8')).toBe('weights\n');
    });

    it('keeps the client inside the volume', async () => {
      const listener = await startServer({ kind: 'retrieval', root });
      const sftp = await openSftp((await login(listener.port)).client);
      // Dot-dot cannot climb above "/": it names the volume's own root.
      const names = await sftpCall<Array<{ filename: string }>>((callback) => sftp.readdir('/../../..', callback));
      expect(names.map((entry) => entry.filename)).toContain('results');
      await expect(sftpCall<Buffer>((callback) => sftp.readFile('/../secret.txt', callback))).rejects.toMatchObject({ code: 2 });
      await expect(sftpCall<Buffer>((callback) => sftp.readFile('/escape', callback))).rejects.toMatchObject({ code: 3 });
      await expect(sftpCall((callback) => sftp.stat('/escape', callback))).rejects.toMatchObject({ code: 3 });
    });

    it('refuses every write', async () => {
      const listener = await startServer({ kind: 'retrieval', root });
      const sftp = await openSftp((await login(listener.port)).client);
      const denied = { code: 3 };
      await expect(sftpCall((callback) => sftp.writeFile('/new.txt', 'x', callback))).rejects.toMatchObject(denied);
      await expect(sftpCall((callback) => sftp.open('/results/model.txt', 'r+', callback))).rejects.toMatchObject(denied);
      await expect(sftpCall((callback) => sftp.unlink('/results/model.txt', callback))).rejects.toMatchObject(denied);
      await expect(sftpCall((callback) => sftp.mkdir('/dir', callback))).rejects.toMatchObject(denied);
      await expect(sftpCall((callback) => sftp.rmdir('/results', callback))).rejects.toMatchObject(denied);
      await expect(sftpCall((callback) => sftp.rename('/big.bin', '/b', callback))).rejects.toMatchObject(denied);
      await expect(sftpCall((callback) => sftp.chmod('/big.bin', 0o777, callback))).rejects.toMatchObject(denied);
      await expect(sftpCall((callback) => sftp.symlink('/big.bin', '/l', callback))).rejects.toMatchObject(denied);
      expect(await readFile(join(root, 'results/model.txt'), 'utf8')).toBe('weights\n');
    });
  });
});

describe('host keys', () => {
  it('are created once and read back with the same fingerprint', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'ark-hostkey-'));
    try {
      const path = join(directory, 'keys', 'job.host-key');
      const first = await loadOrCreateHostKey(path);
      const second = await loadOrCreateHostKey(path);
      expect(second.fingerprint).toBe(first.fingerprint);
      expect(first.publicKey).toMatch(/^ssh-ed25519 /);
      expect(((await import('node:fs')).statSync(path).mode & 0o777).toString(8)).toBe('600');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});

describe('generateHostKey', () => {
  it('always yields a key that signs and verifies (ssh2 keygen drops leading zero bytes)', () => {
    for (let index = 0; index < 1000; index += 1) {
      const key = generateHostKey();
      const parsed = utils.parseKey(key.privateKey);
      if (parsed instanceof Error) throw parsed;
      const data = Buffer.from(`data ${index}`);
      expect(parsed.verify(data, parsed.sign(data))).toBe(true);
      expect(parsed.getPublicSSH().length).toBe(51);
      expect(fingerprintOf(parsed.getPublicSSH())).toBe(key.fingerprint);
    }
  });
});
