// The host side of a rental on real parts: a private dockerd, an image pulled by digest from a
// loopback registry, DockerRuntime against that engine, and the JobSupervisor end to end with real
// SSH and SFTP clients. The channel is a recording port (the supervisor's one-method boundary);
// every message it records is checked against the wire schema.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { compileChannelSchema, JobStatusMessage, type LaunchJobBody, MeterReceiptMessage } from '@ark/shared';
import { fingerprintOf, generateHostKey } from '@ark/host-agent/access/index';
import {
  type JobChannelPort,
  type JobMessageBody,
  type JobStatusBody,
  JobSupervisor,
  type JobSupervisorOptions,
  type MeterReceiptBody,
} from '@ark/host-agent/jobs/index';
import { ContainerRuntimeError, DockerRuntime } from '@ark/host-agent/runtime/index';
import { Client, type ClientChannel, type SFTPWrapper } from 'ssh2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type DockerDaemon, findExecutable, isDockerAvailable, startDockerd } from '../harness/dockerd.js';
import { buildTestImage, type TestImage } from '../harness/images.js';
import { freePort, runCommand, waitFor } from '../harness/processes.js';

const statusCheck = compileChannelSchema(JobStatusMessage);
const receiptCheck = compileChannelSchema(MeterReceiptMessage);
const envelope = { v: 1 as const, sid: 'test-session', seq: 1, id: 1 };

/** The channel port as a real in-memory queue: records what the supervisor hands over, in order. */
class RecordingChannel implements JobChannelPort {
  readonly messages: JobMessageBody[] = [];
  /** While down, enqueue rejects, as the real channel does before it runs. */
  down = false;
  invalid: string[] = [];
  // Asynchronous like the agent's channel client, which persists before it resolves.
  async enqueue(message: JobMessageBody): Promise<number> {
    await new Promise((resolve) => setImmediate(resolve));
    if (this.down) throw new Error('the channel is not running');
    const wire = { ...envelope, ...message };
    const valid = message.t === 'job_status' ? statusCheck.Check(wire) : receiptCheck.Check(wire);
    if (!valid) this.invalid.push(JSON.stringify(message));
    this.messages.push(structuredClone(message));
    return this.messages.length;
  }
  statuses(jobId: string): JobStatusBody[] {
    return this.messages.filter((message): message is JobStatusBody => message.t === 'job_status' && message.job_id === jobId);
  }
  receipts(jobId: string): MeterReceiptBody[] {
    return this.messages.filter((message): message is MeterReceiptBody => message.t === 'meter_receipt' && message.job_id === jobId);
  }
  waitForStatus(jobId: string, status: JobStatusBody['status'], timeoutMs = 30_000): Promise<JobStatusBody> {
    return waitFor(
      () => {
        const found = this.statuses(jobId).find((message) => message.status === status);
        if (found !== undefined) return found;
        const failed = this.statuses(jobId).find((message) => message.status === 'failed');
        if (failed !== undefined && status !== 'failed') throw new Error(`job failed: ${failed.detail}`);
        return undefined;
      },
      { timeoutMs, intervalMs: 25, description: `job ${jobId} status ${status}` },
    );
  }
}

// ed25519 keys from the agent's own generator: ssh2's keygen occasionally writes a malformed one.
const renterKey = generateHostKey();
const renter = { private: renterKey.privateKey, public: renterKey.publicKey };
const strangerKey = generateHostKey();
const stranger = { private: strangerKey.privateKey, public: strangerKey.publicKey };

function sshConnect(port: number, privateKey: string): Promise<{ client: Client; fingerprint: string }> {
  return within(sshConnectUnbounded(port, privateKey), `ssh connect :${port}`);
}

function sshConnectUnbounded(port: number, privateKey: string): Promise<{ client: Client; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const client = new Client();
    let fingerprint = '';
    client.once('ready', () => resolve({ client, fingerprint }));
    client.once('error', reject);
    client.once('close', () => reject(new Error('connection closed before authentication')));
    client.connect({
      host: '127.0.0.1',
      port,
      username: 'root',
      privateKey,
      readyTimeout: 10_000,
      hostVerifier: (key: Buffer) => {
        fingerprint = fingerprintOf(key);
        return true;
      },
    });
  });
}

/** Rejects naming the step when a promise does not settle in time, so a hang points at its cause. */
function within<T>(promise: Promise<T>, what: string, timeoutMs = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function sshExec(client: Client, command: string): Promise<{ stdout: string; stderr: string; code: number | undefined }> {
  return within(sshExecUnbounded(client, command), `ssh exec ${command}`);
}

function sshExecUnbounded(client: Client, command: string): Promise<{ stdout: string; stderr: string; code: number | undefined }> {
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
    });
  });
}

function sshShell(client: Client, input: string): Promise<string> {
  return within(sshShellUnbounded(client, input), 'ssh shell');
}

function sshShellUnbounded(client: Client, input: string): Promise<string> {
  return new Promise((resolve, reject) => {
    client.shell({ term: 'xterm', rows: 24, cols: 80 }, (error: Error | undefined, channel: ClientChannel) => {
      if (error) {
        reject(error);
        return;
      }
      let output = '';
      channel.on('data', (data: Buffer) => {
        output += data.toString();
      });
      channel.on('close', () => resolve(output));
      channel.write(input);
    });
  });
}

function sftpOf(client: Client): Promise<SFTPWrapper> {
  return within(new Promise((resolve, reject) => client.sftp((error, sftp) => (error ? reject(error) : resolve(sftp)))), 'sftp session');
}

function readAll(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

/** A port range of 100 ports starting at a free one, different per run. */
async function portRange(): Promise<{ first: number; last: number }> {
  const first = 20_000 + Math.floor(Math.random() * 20_000);
  return { first, last: first + 99 };
}

describe.skipIf(!isDockerAvailable())('agent runtime on a real Docker engine', () => {
  let daemon: DockerDaemon;
  let image: TestImage;
  let runtime: DockerRuntime;
  let stateRoot: string;
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    daemon = await startDockerd();
    image = await buildTestImage(daemon, { files: { '/www/index.html': 'ark-ok\n' } });
    // Only the registry holds the image now: the first pull is a real one.
    await daemon.docker(['rmi', image.localRef, image.ref]);
    runtime = new DockerRuntime({ socketPath: daemon.socketPath, callTimeoutMs: 20_000 });
    stateRoot = await mkdtemp(join(tmpdir(), 'ark-agent-state-'));
  }, 120_000);

  afterAll(async () => {
    await image?.registry.stop();
    await daemon?.stop();
    if (stateRoot !== undefined) await rm(stateRoot, { recursive: true, force: true });
    console.info(`agent runtime timings: ${JSON.stringify(timings)}`);
  }, 60_000);

  describe('DockerRuntime', () => {
    it('pulls by digest with progress, then finds it present; refuses unknown digests and tags', async () => {
      const progress: number[] = [];
      const started = Date.now();
      const pulled = await runtime.pullImage(image.digestRef, { onProgress: (percent) => progress.push(percent) });
      timings.pullByDigestMs = Date.now() - started;
      expect(pulled.pulled).toBe(true);
      expect(pulled.repoDigests).toContain(image.digestRef);
      expect(progress.at(-1)).toBe(100);
      expect(progress).toEqual([...progress].sort((a, b) => a - b));
      expect((await runtime.pullImage(image.digestRef)).pulled).toBe(false);

      const repository = image.digestRef.slice(0, image.digestRef.indexOf('@'));
      const unknown = `${repository}@sha256:${'0'.repeat(64)}`;
      await expect(runtime.pullImage(unknown)).rejects.toMatchObject({ code: 'IMAGE_PULL_FAILED' });
      await expect(runtime.pullImage(image.ref)).rejects.toMatchObject({ code: 'IMAGE_REFERENCE_INVALID' });
      await expect(runtime.pullImage(image.ref)).rejects.toBeInstanceOf(ContainerRuntimeError);
    });

    it('creates, starts, execs, stops and removes a container; its volume outlives it until removed', async () => {
      const name = `ark-runtime-${randomUUID()}`;
      await runtime.ensureVolume(name, { 'ark.test': '1' });
      await runtime.ensureVolume(name, { 'ark.test': '1' });
      const id = await runtime.createContainer({
        name,
        image: image.digestRef,
        labels: { 'ark.test': name },
        env: { GREETING: 'hi there' },
        command: ['sleep', '300'],
        volumeName: name,
        volumeMountPath: '/workspace',
        networkMode: 'host',
        portBindings: [],
        gpuDeviceIds: [],
      });
      expect((await runtime.inspectContainer(id))?.status).toBe('created');
      await runtime.startContainer(id);
      await runtime.startContainer(id);
      const running = await runtime.inspectContainer(name);
      expect(running).toMatchObject({ id, name, status: 'running', running: true, labels: { 'ark.test': name } });
      expect(running?.startedAt).toBeInstanceOf(Date);
      expect((await runtime.listContainers('ark.test')).map((container) => container.id)).toContain(id);

      const exec = await runtime.exec(id, {
        command: ['sh', '-c', 'echo $GREETING; echo err >&2; echo kept > /workspace/out.txt; exit 4'],
        tty: false,
      });
      exec.stdin.end();
      const [stdout, stderr, code] = await Promise.all([readAll(exec.stdout), readAll(exec.stderr), exec.exited]);
      expect({ stdout: stdout.toString(), stderr: stderr.toString(), code }).toEqual({ stdout: 'hi there\n', stderr: 'err\n', code: 4 });

      const piped = await runtime.exec(id, { command: ['tr', 'a-z', 'A-Z'], tty: false });
      piped.stdin.end('shout');
      expect((await readAll(piped.stdout)).toString()).toBe('SHOUT');
      expect(await piped.exited).toBe(0);

      const tty = await runtime.exec(id, { command: ['sh', '-c', 'tty'], tty: true, rows: 30, cols: 100 });
      const ttyOutput = (await readAll(tty.stdout)).toString();
      expect(ttyOutput).toMatch(/^\/dev\/pts\/\d+\r\n$/);
      expect(await tty.exited).toBe(0);

      await runtime.stopContainer(id, 1);
      await runtime.stopContainer(id, 1);
      const stopped = await runtime.inspectContainer(id);
      expect(stopped).toMatchObject({ running: false, status: 'exited' });
      expect(stopped?.finishedAt?.getTime()).toBeGreaterThanOrEqual(running?.startedAt?.getTime() ?? Number.POSITIVE_INFINITY);
      expect(await runtime.containerLogs(id, { tailLines: 10, maxBytes: 1000 })).toBe('');

      const mountpoint = await runtime.volumeMountpoint(name);
      expect(await readFile(join(mountpoint as string, 'out.txt'), 'utf8')).toBe('kept\n');
      const archive = await readAll(await runtime.exportPath(id, '/workspace'));
      expect(archive.includes(Buffer.from('workspace/out.txt'))).toBe(true);

      await runtime.removeContainer(id);
      await runtime.removeContainer(id);
      expect(await runtime.inspectContainer(id)).toBeUndefined();
      expect(await runtime.volumeMountpoint(name)).toBe(mountpoint);
      await runtime.removeVolume(name);
      await runtime.removeVolume(name);
      expect(await runtime.volumeMountpoint(name)).toBeUndefined();
    });
  });

  describe('JobSupervisor', () => {
    const channels: RecordingChannel[] = [];
    afterEach(() => {
      // Every message handed to the channel matches the wire schema.
      for (const channel of channels.splice(0)) expect(channel.invalid).toEqual([]);
    });

    async function supervisorFor(
      stateDir: string,
      channel: RecordingChannel,
      extra: Partial<JobSupervisorOptions> = {},
    ): Promise<JobSupervisor> {
      channels.push(channel);
      const supervisor = new JobSupervisor({
        stateDir,
        runtime,
        channel,
        portRange: await portRange(),
        networkMode: 'host',
        sshBindHost: '127.0.0.1',
        stopGraceS: 1,
        readinessTimeoutMs: 20_000,
        readinessIntervalMs: 50,
        exitWatchIntervalMs: 100,
        pullProgressIntervalMs: 0,
        ...(process.env.ARK_TEST_DEBUG ? { logger: { info: console.info, warn: console.warn, error: console.error } } : {}),
        ...extra,
      });
      await supervisor.start();
      return supervisor;
    }

    async function launchBody(overrides: Partial<LaunchJobBody> = {}): Promise<LaunchJobBody> {
      const httpPort = await freePort();
      return {
        job_id: randomUUID(),
        fence: '1',
        image_digest: image.digestRef,
        gpu_pci_addresses: [],
        env: { GREETING: 'hello from env' },
        command: ['httpd', '-f', '-p', `127.0.0.1:${httpPort}`, '-h', '/www'],
        ports: [{ container_port: httpPort, protocol: 'http' }],
        ssh_public_keys: [`${renter.public} renter@laptop`],
        health_check: { port: httpPort, path: '/index.html' },
        meter_interval_s: 1,
        ...overrides,
      };
    }

    it('launches, meters, serves SSH, survives a restart, stops into retrieval and cleans', async () => {
      const stateDir = join(stateRoot, 'full');
      const channel = new RecordingChannel();
      let supervisor = await supervisorFor(stateDir, channel);
      const body = await launchBody();
      const jobId = body.job_id;
      const httpPort = body.ports[0]?.container_port as number;

      const launchedAt = Date.now();
      await within(supervisor.handleCommand({ kind: 'launch_job', body }), 'launch_job');
      expect(channel.statuses(jobId).map((status) => status.status)).toEqual(['accepted']);
      const ready = await channel.waitForStatus(jobId, 'ready');
      timings.launchToReadyMs = Date.now() - launchedAt;

      // accepted, pulling (0 .. 100), starting, ready: in that order, each under fence 1.
      const sequence = channel.statuses(jobId).map((status) => status.status);
      expect(sequence[0]).toBe('accepted');
      expect(sequence.slice(1, -2).every((status) => status === 'pulling')).toBe(true);
      expect(sequence.slice(-2)).toEqual(['starting', 'ready']);
      const pulling = channel.statuses(jobId).filter((status) => status.status === 'pulling');
      expect(pulling[0]?.progress_pct).toBe(0);
      expect(pulling.at(-1)?.progress_pct).toBe(100);
      expect(channel.statuses(jobId).every((status) => status.fence === '1')).toBe(true);
      expect(ready.evidence).toMatchObject({ container_running: true, health: 'http 200' });
      const access = ready.access;
      expect(access?.ssh_host_key_fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
      expect(access?.ports).toEqual([{ container_port: httpPort, host_port: httpPort, protocol: 'http' }]);
      const sshPort = access?.ssh_port as number;
      expect(supervisor.runningJobs()).toEqual([{ job_id: jobId, fence: '1', container_state: 'running' }]);
      expect(await (await fetch(`http://127.0.0.1:${httpPort}/index.html`, { signal: AbortSignal.timeout(10_000) })).text()).toBe(
        'ark-ok\n',
      );

      // The renter's key runs commands inside the container; a stranger's key is refused.
      const { client, fingerprint } = await sshConnect(sshPort, renter.private);
      expect(fingerprint).toBe(access?.ssh_host_key_fingerprint);
      expect(await sshExec(client, 'echo hello')).toEqual({ stdout: 'hello\n', stderr: '', code: 0 });
      expect(await sshExec(client, 'echo "$GREETING"; cat /proc/1/cmdline | tr "\\0" " "')).toMatchObject({
        stdout: `hello from env\nhttpd -f -p 127.0.0.1:${httpPort} -h /www `,
        code: 0,
      });
      expect(await sshExec(client, 'echo result > /workspace/result.txt && exit 7')).toMatchObject({ code: 7 });
      const shellOutput = await sshShell(client, 'tty; echo from-$((40+2)); exit\n');
      expect(shellOutput).toMatch(/\/dev\/pts\/\d+/);
      expect(shellOutput).toContain('from-42');
      client.end();
      await expect(sshConnect(sshPort, stranger.private)).rejects.toThrow(/authentication methods failed/);

      // Receipts every second: seq 1, 2, ... over contiguous periods, runtime within each period.
      await waitFor(() => channel.receipts(jobId).length >= 2, { timeoutMs: 10_000, description: 'two receipts' });

      // A new supervisor over the same state directory takes over the running job.
      await within(supervisor.close(), 'supervisor close', 45_000);
      const receiptsBeforeRestart = channel.receipts(jobId).length;
      await expect(sshConnect(sshPort, renter.private)).rejects.toThrow();
      supervisor = await supervisorFor(stateDir, channel);
      expect(supervisor.runningJobs()).toEqual([{ job_id: jobId, fence: '1', container_state: 'running' }]);
      const again = await sshConnect(sshPort, renter.private);
      expect(again.fingerprint).toBe(access?.ssh_host_key_fingerprint);
      expect(await sshExec(again.client, 'cat /workspace/result.txt')).toEqual({ stdout: 'result\n', stderr: '', code: 0 });
      again.client.end();
      await waitFor(() => channel.receipts(jobId).length >= receiptsBeforeRestart + 1, {
        timeoutMs: 10_000,
        description: 'a receipt after restart',
      });

      // Stop: docker stop, the final receipt, then stopped; the container is kept, the volume served read-only.
      await within(
        supervisor.handleCommand({
          kind: 'stop_job',
          body: { job_id: jobId, fence: '1', reason: 'renter asked', retrieval_window_s: 600 },
        }),
        'stop_job',
      );
      await channel.waitForStatus(jobId, 'stopped');
      const receipts = channel.receipts(jobId);
      receipts.forEach((receipt, index) => {
        expect(receipt.meter_seq).toBe(index + 1);
        expect(receipt.fence).toBe('1');
        expect(receipt.final).toBe(index === receipts.length - 1);
        const periodMs = Date.parse(receipt.period_end) - Date.parse(receipt.period_start);
        expect(periodMs).toBeGreaterThanOrEqual(0);
        expect(BigInt(receipt.runtime_ms)).toBeLessThanOrEqual(BigInt(periodMs));
        if (index > 0) expect(receipt.period_start).toBe(receipts[index - 1]?.period_end);
      });
      expect(receipts[0]?.period_start).toBe(channel.statuses(jobId).find((status) => status.status === 'ready')?.at);
      expect(BigInt(receipts[0]?.runtime_ms ?? '0')).toBeGreaterThan(0n);
      const finalIndex = channel.messages.findIndex(
        (message) => message.t === 'meter_receipt' && message.job_id === jobId && message.final,
      );
      const stoppedIndex = channel.messages.findIndex(
        (message) => message.t === 'job_status' && message.job_id === jobId && message.status === 'stopped',
      );
      expect(finalIndex).toBeLessThan(stoppedIndex);
      expect(supervisor.runningJobs()).toEqual([]);
      const container = await runtime.inspectContainer(`ark-job-${jobId}`);
      expect(container).toMatchObject({ running: false });

      const retrieval = await sshConnect(sshPort, renter.private);
      await expect(sshExec(retrieval.client, 'echo no')).rejects.toThrow();
      const sftp = await sftpOf(retrieval.client);
      const content = await within(
        new Promise<Buffer>((resolve, reject) =>
          sftp.readFile('/result.txt', (error: Error | undefined, data: Buffer) => (error ? reject(error) : resolve(data))),
        ),
        'sftp read',
      );
      expect(content.toString()).toBe('result\n');
      await expect(
        new Promise<void>((resolve, reject) => sftp.writeFile('/new.txt', 'x', (error) => (error ? reject(error) : resolve()))),
      ).rejects.toMatchObject({ code: 3 });
      await expect(
        new Promise<Buffer>((resolve, reject) =>
          sftp.readFile('/../../etc/hostname', (error: Error | undefined, data: Buffer) => (error ? reject(error) : resolve(data))),
        ),
      ).rejects.toMatchObject({ code: 2 });
      retrieval.client.end();

      // Retrieval also survives a restart.
      await within(supervisor.close(), 'supervisor close', 45_000);
      supervisor = await supervisorFor(stateDir, channel);
      const afterRestart = await sshConnect(sshPort, renter.private);
      const names = await new Promise<string[]>((resolve, reject) =>
        sftpOf(afterRestart.client).then(
          (s) => s.readdir('/', (error, list) => (error ? reject(error) : resolve(list.map((entry) => entry.filename)))),
          reject,
        ),
      );
      expect(names).toContain('result.txt');
      afterRestart.client.end();
      expect(channel.receipts(jobId)).toHaveLength(receipts.length);

      // Clean: container and volume gone, the listener closed.
      await within(supervisor.handleCommand({ kind: 'clean_job', body: { job_id: jobId, fence: '1' } }), 'clean_job');
      await channel.waitForStatus(jobId, 'cleaned');
      expect(await runtime.inspectContainer(`ark-job-${jobId}`)).toBeUndefined();
      expect(await runtime.volumeMountpoint(`ark-job-${jobId}`)).toBeUndefined();
      await expect(sshConnect(sshPort, renter.private)).rejects.toThrow(/ECONNREFUSED/);
      const record = JSON.parse(await readFile(join(stateDir, 'jobs', `${jobId}.json`), 'utf8')) as { phase: string; launch?: unknown };
      expect(record.phase).toBe('cleaned');
      expect(record.launch).toBeUndefined();
      await within(supervisor.close(), 'supervisor close', 45_000);
    }, 120_000);

    it.skipIf(findExecutable('ssh') === undefined || findExecutable('sftp') === undefined)(
      'works with the OpenSSH client: ssh with a pty, the reported host key, sftp in retrieval',
      async () => {
        const channel = new RecordingChannel();
        const supervisor = await supervisorFor(join(stateRoot, 'openssh'), channel);
        const body = await launchBody();
        await within(supervisor.handleCommand({ kind: 'launch_job', body }), 'launch_job');
        const ready = await channel.waitForStatus(body.job_id, 'ready');
        const port = String(ready.access?.ssh_port);
        const directory = await mkdtemp(join(tmpdir(), 'ark-openssh-'));
        const identity = join(directory, 'id_ed25519');
        await writeFile(identity, renter.private, { mode: 0o600 });
        const knownHosts = join(directory, 'known_hosts');
        const options = [
          '-i',
          identity,
          '-o',
          'BatchMode=yes',
          '-o',
          'IdentitiesOnly=yes',
          '-o',
          'StrictHostKeyChecking=accept-new',
          '-o',
          `UserKnownHostsFile=${knownHosts}`,
          '-o',
          'LogLevel=ERROR',
        ];
        const env = { HOME: directory };
        const hello = await runCommand(
          'ssh',
          ['-p', port, ...options, 'root@127.0.0.1', 'echo hello; echo "$GREETING" > /workspace/greeting.txt'],
          { env, timeoutMs: 20_000 },
        );
        expect(hello.stdout).toBe('hello\n');
        const terminal = await runCommand('ssh', ['-tt', '-p', port, ...options, 'root@127.0.0.1', 'tty'], { env, timeoutMs: 20_000 });
        expect(terminal.stdout).toMatch(/^\/dev\/pts\/\d+\r\n$/);
        // What OpenSSH recorded is the key the agent reported.
        const { stdout: recorded } = await runCommand('ssh-keygen', ['-l', '-f', knownHosts], { env });
        expect(recorded).toContain(ready.access?.ssh_host_key_fingerprint);

        await within(
          supervisor.handleCommand({
            kind: 'stop_job',
            body: { job_id: body.job_id, fence: '1', reason: 'done', retrieval_window_s: 300 },
          }),
          'stop_job',
        );
        await channel.waitForStatus(body.job_id, 'stopped');
        const batch = join(directory, 'batch');
        await writeFile(batch, `get /greeting.txt ${join(directory, 'greeting.txt')}\n`);
        await runCommand('sftp', ['-b', batch, '-P', port, ...options, 'root@127.0.0.1'], { env, timeoutMs: 20_000 });
        expect(await readFile(join(directory, 'greeting.txt'), 'utf8')).toBe('hello from env\n');
        await writeFile(batch, `put ${identity} /stolen\n`);
        await expect(
          runCommand('sftp', ['-b', batch, '-P', port, ...options, 'root@127.0.0.1'], { env, timeoutMs: 20_000 }),
        ).rejects.toThrow(/Permission denied/);
        await expect(
          runCommand('ssh', ['-p', port, ...options, 'root@127.0.0.1', 'echo no'], { env, timeoutMs: 20_000 }),
        ).rejects.toThrow();

        await within(supervisor.handleCommand({ kind: 'clean_job', body: { job_id: body.job_id, fence: '1' } }), 'clean_job');
        await channel.waitForStatus(body.job_id, 'cleaned');
        await within(supervisor.close(), 'supervisor close', 45_000);
        await rm(directory, { recursive: true, force: true });
      },
    );

    it('keeps job messages while the channel refuses them, then hands them over in order, once', async () => {
      const channel = new RecordingChannel();
      const supervisor = await supervisorFor(join(stateRoot, 'channel-down'), channel, { channelRetryMs: 200 });
      channel.down = true;
      const body = await launchBody();
      await within(supervisor.handleCommand({ kind: 'launch_job', body }), 'launch_job');
      await waitFor(() => supervisor.job(body.job_id)?.phase === 'ready', {
        timeoutMs: 20_000,
        description: 'ready while the channel is down',
      });
      expect(channel.messages).toEqual([]);
      expect(supervisor.job(body.job_id)?.outbox.map((message) => (message.t === 'job_status' ? message.status : message.t))).toEqual(
        expect.arrayContaining(['accepted', 'starting', 'ready']),
      );
      channel.down = false;
      await channel.waitForStatus(body.job_id, 'ready');
      const statuses = channel.statuses(body.job_id).map((status) => status.status);
      expect(statuses[0]).toBe('accepted');
      expect(statuses.slice(-2)).toEqual(['starting', 'ready']);
      for (const once of ['accepted', 'starting', 'ready']) expect(statuses.filter((status) => status === once)).toHaveLength(1);
      await waitFor(() => channel.receipts(body.job_id).length >= 1, { timeoutMs: 10_000 });
      expect(channel.receipts(body.job_id)[0]?.meter_seq).toBe(1);
      await within(supervisor.handleCommand({ kind: 'clean_job', body: { job_id: body.job_id, fence: '1' } }), 'clean_job');
      await channel.waitForStatus(body.job_id, 'cleaned');
      const receipts = channel.receipts(body.job_id);
      expect(receipts.map((receipt) => receipt.meter_seq)).toEqual(receipts.map((_, index) => index + 1));
      expect(receipts.at(-1)?.final).toBe(true);
      await within(supervisor.close(), 'supervisor close', 45_000);
    });

    it('reports a failed launch for a digest the registry does not have', async () => {
      const channel = new RecordingChannel();
      const supervisor = await supervisorFor(join(stateRoot, 'bad-digest'), channel);
      const repository = image.digestRef.slice(0, image.digestRef.indexOf('@'));
      const body = await launchBody({ image_digest: `${repository}@sha256:${'1'.repeat(64)}` });
      await within(supervisor.handleCommand({ kind: 'launch_job', body }), 'launch_job');
      const failed = await channel.waitForStatus(body.job_id, 'failed');
      expect(failed.detail).toMatch(/pull failed/);
      expect(channel.statuses(body.job_id).map((status) => status.status)).toEqual(['accepted', 'pulling', 'failed']);
      expect(await runtime.inspectContainer(`ark-job-${body.job_id}`)).toBeUndefined();
      await within(supervisor.close(), 'supervisor close', 45_000);
    });

    it('fails a job whose container exits before it is ready, quoting its output', async () => {
      const channel = new RecordingChannel();
      const supervisor = await supervisorFor(join(stateRoot, 'early-exit'), channel);
      const body = await launchBody({
        command: ['sh', '-c', 'echo boom $SECRET_TOKEN; exit 3'],
        env: { SECRET_TOKEN: 'do-not-leak-this' },
      });
      await within(supervisor.handleCommand({ kind: 'launch_job', body }), 'launch_job');
      const failed = await channel.waitForStatus(body.job_id, 'failed');
      expect(failed.exit_code).toBe(3);
      expect(failed.detail).toContain('boom [redacted]');
      expect(failed.detail).not.toContain('do-not-leak-this');
      await within(supervisor.handleCommand({ kind: 'clean_job', body: { job_id: body.job_id, fence: '1' } }), 'clean_job');
      await channel.waitForStatus(body.job_id, 'cleaned');
      expect(await runtime.inspectContainer(`ark-job-${body.job_id}`)).toBeUndefined();
      await within(supervisor.close(), 'supervisor close', 45_000);
    });

    it('abandons a launch that a stop overtakes: no ready, no receipt, stopped', async () => {
      const channel = new RecordingChannel();
      const supervisor = await supervisorFor(join(stateRoot, 'stop-early'), channel);
      const silentPort = await freePort();
      // Nothing listens on the health port: readiness keeps trying until the stop arrives.
      const body = await launchBody({
        command: ['sleep', '300'],
        ports: [{ container_port: silentPort, protocol: 'http' }],
        health_check: { port: silentPort, path: '/' },
      });
      await within(supervisor.handleCommand({ kind: 'launch_job', body }), 'launch_job');
      await channel.waitForStatus(body.job_id, 'starting');
      await waitFor(async () => (await runtime.inspectContainer(`ark-job-${body.job_id}`))?.running === true, { timeoutMs: 10_000 });
      await within(
        supervisor.handleCommand({
          kind: 'stop_job',
          body: { job_id: body.job_id, fence: '1', reason: 'changed my mind', retrieval_window_s: 0 },
        }),
        'stop_job',
      );
      await channel.waitForStatus(body.job_id, 'stopped');
      const statuses = channel.statuses(body.job_id).map((status) => status.status);
      expect(statuses).not.toContain('ready');
      expect(statuses).not.toContain('failed');
      expect(channel.receipts(body.job_id)).toEqual([]);
      expect((await runtime.inspectContainer(`ark-job-${body.job_id}`))?.running).toBe(false);
      await within(supervisor.handleCommand({ kind: 'clean_job', body: { job_id: body.job_id, fence: '1' } }), 'clean_job');
      await channel.waitForStatus(body.job_id, 'cleaned');
      await within(supervisor.close(), 'supervisor close', 45_000);
    });

    it('asks Docker for the assigned GPUs by device ID, and refuses a GPU that is not here', async () => {
      const channel = new RecordingChannel();
      const inventory = {
        inventory: async () => ({
          gpus: [{ pci_address: '0000:3b:00.0', model: 'NVIDIA L4', uuid: 'GPU-6f1c2d3e-0000-4000-8000-000000000001' }],
        }),
      };
      const supervisor = await supervisorFor(join(stateRoot, 'gpus'), channel, { gpuInventory: inventory });
      const missing = await launchBody({ gpu_pci_addresses: ['0000:af:00.0'] });
      await within(supervisor.handleCommand({ kind: 'launch_job', body: missing }), 'launch_job');
      expect((await channel.waitForStatus(missing.job_id, 'failed')).detail).toMatch(/GPU 0000:af:00.0 is not on this machine/);
      // This engine has no NVIDIA runtime, so the device request itself is what Docker refuses.
      const assigned = await launchBody({ gpu_pci_addresses: ['3b:00.0'] });
      await within(supervisor.handleCommand({ kind: 'launch_job', body: assigned }), 'launch_job');
      expect((await channel.waitForStatus(assigned.job_id, 'failed')).detail).toMatch(/nvidia/);
      const created = await daemon.docker(['inspect', '--format', '{{json .HostConfig.DeviceRequests}}', `ark-job-${assigned.job_id}`]);
      expect(JSON.parse(created.stdout)).toEqual([
        { Driver: 'nvidia', Count: 0, DeviceIDs: ['GPU-6f1c2d3e-0000-4000-8000-000000000001'], Capabilities: [['gpu']], Options: null },
      ]);
      // Without GPUs there is no device request at all.
      const none = await launchBody();
      await within(supervisor.handleCommand({ kind: 'launch_job', body: none }), 'launch_job');
      await channel.waitForStatus(none.job_id, 'ready');
      const plain = await daemon.docker(['inspect', '--format', '{{json .HostConfig.DeviceRequests}}', `ark-job-${none.job_id}`]);
      expect(JSON.parse(plain.stdout)).toBeNull();
      for (const body of [missing, assigned, none])
        await within(supervisor.handleCommand({ kind: 'clean_job', body: { job_id: body.job_id, fence: '1' } }), 'clean_job');
      for (const body of [missing, assigned, none]) await channel.waitForStatus(body.job_id, 'cleaned');
      await within(supervisor.close(), 'supervisor close', 45_000);
    });

    it('meters until a container exits on its own, then reports exited with the final receipt', async () => {
      const channel = new RecordingChannel();
      const supervisor = await supervisorFor(join(stateRoot, 'exits'), channel);
      const port = await freePort();
      const body = await launchBody({
        command: ['sh', '-c', `httpd -p 127.0.0.1:${port} -h /www; sleep 1.5; echo bye`],
        ports: [{ container_port: port, protocol: 'tcp' }],
        health_check: { port },
      });
      await within(supervisor.handleCommand({ kind: 'launch_job', body }), 'launch_job');
      const ready = await channel.waitForStatus(body.job_id, 'ready');
      expect(ready.evidence).toMatchObject({ container_running: true, health: `tcp connect :${port}` });
      const exited = await channel.waitForStatus(body.job_id, 'exited', 15_000);
      expect(exited.exit_code).toBe(0);
      expect(exited.detail).toContain('bye');
      const receipts = channel.receipts(body.job_id);
      expect(receipts.at(-1)?.final).toBe(true);
      const total = receipts.reduce((sum, receipt) => sum + BigInt(receipt.runtime_ms), 0n);
      // Ran about 1.5 s after readiness; everything after the exit is unmetered.
      expect(total).toBeGreaterThan(800n);
      expect(total).toBeLessThan(3_000n);
      expect(supervisor.runningJobs()).toEqual([]);
      // A stop after the exit sends no second final receipt.
      await within(
        supervisor.handleCommand({ kind: 'stop_job', body: { job_id: body.job_id, fence: '1', reason: 'done', retrieval_window_s: 1 } }),
        'stop_job',
      );
      await channel.waitForStatus(body.job_id, 'stopped');
      expect(channel.receipts(body.job_id)).toHaveLength(receipts.length);
      // Retrieval is open for its window, then the listener closes.
      const sshPort = ready.access?.ssh_port as number;
      const retrieval = await sshConnect(sshPort, renter.private);
      retrieval.client.end();
      await waitFor(
        async () => {
          try {
            (await sshConnect(sshPort, renter.private)).client.end();
            return false;
          } catch (error) {
            return /ECONNREFUSED/.test(String(error));
          }
        },
        { timeoutMs: 5_000, intervalMs: 100, description: 'the retrieval window to close' },
      );
      await within(supervisor.close(), 'supervisor close', 45_000);
    });

    it('serves retrieval from an archive copy when asked to, and ignores stale fences', async () => {
      const channel = new RecordingChannel();
      const supervisor = await supervisorFor(join(stateRoot, 'archive'), channel, { retrievalSource: 'archive' });
      const body = await launchBody({ fence: '5' });
      await within(supervisor.handleCommand({ kind: 'launch_job', body }), 'launch_job');
      const ready = await channel.waitForStatus(body.job_id, 'ready');
      const sshPort = ready.access?.ssh_port as number;
      const session = await sshConnect(sshPort, renter.private);
      await sshExec(session.client, 'mkdir -p /workspace/out && echo archived > /workspace/out/a.txt');
      session.client.end();
      // A stop under an older fence is stale: ignored.
      await within(
        supervisor.handleCommand({ kind: 'stop_job', body: { job_id: body.job_id, fence: '4', reason: 'stale', retrieval_window_s: 60 } }),
        'stop_job',
      );
      expect(supervisor.runningJobs()).toHaveLength(1);
      // A launch under a newer fence rebinds: ready again under fence 6, and the meter restarts at seq 1.
      await within(supervisor.handleCommand({ kind: 'launch_job', body: { ...body, fence: '6' } }), 'launch_job');
      const rebound = channel.statuses(body.job_id).filter((status) => status.status === 'ready');
      expect(rebound.map((status) => status.fence)).toEqual(['5', '6']);
      await waitFor(() => channel.receipts(body.job_id).some((receipt) => receipt.fence === '6'), { timeoutMs: 10_000 });
      expect(channel.receipts(body.job_id).find((receipt) => receipt.fence === '6')?.meter_seq).toBe(1);
      await within(
        supervisor.handleCommand({ kind: 'stop_job', body: { job_id: body.job_id, fence: '6', reason: 'done', retrieval_window_s: 60 } }),
        'stop_job',
      );
      await channel.waitForStatus(body.job_id, 'stopped');
      const retrieval = await sshConnect(sshPort, renter.private);
      const sftp = await sftpOf(retrieval.client);
      const content = await within(
        new Promise<Buffer>((resolve, reject) =>
          sftp.readFile('/out/a.txt', (error: Error | undefined, data: Buffer) => (error ? reject(error) : resolve(data))),
        ),
        'sftp read',
      );
      expect(content.toString()).toBe('archived\n');
      retrieval.client.end();
      await within(supervisor.handleCommand({ kind: 'clean_job', body: { job_id: body.job_id, fence: '6' } }), 'clean_job');
      await channel.waitForStatus(body.job_id, 'cleaned');
      await within(supervisor.close(), 'supervisor close', 45_000);
    });
  });
});
