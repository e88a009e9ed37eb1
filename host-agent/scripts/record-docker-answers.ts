// Records the Docker Engine API answers that RecordedContainerRuntime replays: a private dockerd
// (the e2e harness's, test/harness/dockerd.ts) runs one job container through its life the way the
// supervisor drives it (pull by digest, volume, create, start, stop) and a second one that exits on
// its own, and every answer is written as Docker sent it to src/runtime/testing/docker-answers.json.
//
//   pnpm exec tsx host-agent/scripts/record-docker-answers.ts      (root: dockerd needs it)
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDockerd } from '../../test/harness/dockerd.js';
import { buildTestImage } from '../../test/harness/images.js';

type Answer = { status: number; body: Buffer };

function call(socketPath: string, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = request(
      {
        socketPath,
        method,
        path,
        headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': payload.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.once('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.end(payload);
  });
}

async function json(socketPath: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const answer = await call(socketPath, method, path, body);
  if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${answer.body.toString()}`);
  return answer.body.length === 0 ? null : JSON.parse(answer.body.toString('utf8'));
}

function lines(body: Buffer): unknown[] {
  return body
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as unknown);
}

const output = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'runtime', 'testing', 'docker-answers.json');

const daemon = await startDockerd();
const image = await buildTestImage(daemon, { files: { '/www/index.html': 'ark-ok\n' } });
try {
  const socket = daemon.socketPath;
  // Only the registry holds the image now: the recorded pull is a real one.
  await daemon.docker(['rmi', image.localRef, image.ref]);
  const repository = image.digestRef.slice(0, image.digestRef.indexOf('@'));
  const version = (await json(socket, 'GET', '/version')) as Record<string, unknown>;
  const info = (await json(socket, 'GET', '/info')) as Record<string, unknown>;
  const pull = await call(socket, 'POST', `/images/create?fromImage=${encodeURIComponent(repository)}&tag=${image.digest}`);
  const unknownDigest = `sha256:${'1'.repeat(64)}`;
  const pullUnknown = await call(socket, 'POST', `/images/create?fromImage=${encodeURIComponent(repository)}&tag=${unknownDigest}`);
  const imageInspect = await json(socket, 'GET', `/images/${encodeURIComponent(image.digestRef)}/json`);

  const jobId = randomUUID();
  const name = `ark-job-${jobId}`;
  const labels = { 'ark.job_id': jobId, 'ark.fence': '1', 'ark.managed-by': 'ark-agent' };
  const volumeCreate = await json(socket, 'POST', '/volumes/create', { Name: name, Labels: labels });
  const volumeInspect = await json(socket, 'GET', `/volumes/${name}`);
  // The body DockerRuntime.createContainer sends, with host networking as the e2e suite runs it.
  const spec = (command: string[], env: Record<string, string>, labelsOf: Record<string, string>, volume: string) => ({
    Image: image.digestRef,
    Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
    Cmd: command,
    Labels: labelsOf,
    HostConfig: {
      NetworkMode: 'host',
      Mounts: [{ Type: 'volume', Source: volume, Target: '/workspace' }],
      RestartPolicy: { Name: 'no' },
      Privileged: false,
      SecurityOpt: ['no-new-privileges:true'],
      CapDrop: ['ALL'],
      CapAdd: ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'NET_BIND_SERVICE'],
      NanoCpus: 1_000_000_000,
      Memory: 256 * 1024 * 1024,
      MemorySwap: 256 * 1024 * 1024,
      PidsLimit: 256,
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
    },
  });
  const created = (await json(
    socket,
    'POST',
    `/containers/create?name=${name}`,
    spec(['sh', '-c', 'echo started; exec sleep 300'], { GREETING: 'hello from env' }, labels, name),
  )) as { Id: string };
  const inspectCreated = await json(socket, 'GET', `/containers/${created.Id}/json`);
  await json(socket, 'POST', `/containers/${created.Id}/start`);
  const inspectRunning = await json(socket, 'GET', `/containers/${created.Id}/json`);
  const startAgain = await call(socket, 'POST', `/containers/${created.Id}/start`);
  await daemon.docker(['exec', created.Id, 'sh', '-c', 'mkdir -p /workspace/out && echo result > /workspace/out/result.txt']);
  // What the confinement watch reads: one stats reading (host networking: no interface of its own) and the size of
  // the writable layer after a write outside the volume.
  await daemon.docker(['exec', created.Id, 'sh', '-c', 'dd if=/dev/zero of=/scratch.bin bs=1k count=64 2>/dev/null']);
  const stats = await json(socket, 'GET', `/containers/${created.Id}/stats?stream=false&one-shot=true`);
  const inspectSize = (await json(socket, 'GET', `/containers/${created.Id}/json?size=true`)) as { SizeRw?: number; SizeRootFs?: number };
  const list = await json(socket, 'GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: ['ark.job_id'] }))}`);
  // The supervisor's grace is 10 s; sleep as PID 1 ignores SIGTERM, so the stop ends in SIGKILL either way.
  await json(socket, 'POST', `/containers/${created.Id}/stop?t=1`);
  const inspectStopped = await json(socket, 'GET', `/containers/${created.Id}/json`);
  const stopAgain = await call(socket, 'POST', `/containers/${created.Id}/stop?t=1`);
  const logsStopped = await call(socket, 'GET', `/containers/${created.Id}/logs?stdout=1&stderr=1&follow=0&tail=20`);
  const archive = await call(socket, 'GET', `/containers/${created.Id}/archive?path=${encodeURIComponent('/workspace')}`);

  const exitingId = randomUUID();
  const exitingName = `ark-job-${exitingId}`;
  await json(socket, 'POST', '/volumes/create', { Name: exitingName, Labels: { ...labels, 'ark.job_id': exitingId } });
  const exiting = (await json(
    socket,
    'POST',
    `/containers/create?name=${exitingName}`,
    spec(
      ['sh', '-c', 'echo boom $SECRET_TOKEN; echo to stderr >&2; exit 3'],
      { SECRET_TOKEN: 'do-not-leak-this' },
      { ...labels, 'ark.job_id': exitingId },
      exitingName,
    ),
  )) as { Id: string };
  await json(socket, 'POST', `/containers/${exiting.Id}/start`);
  await json(socket, 'POST', `/containers/${exiting.Id}/wait`);
  const inspectExited = await json(socket, 'GET', `/containers/${exiting.Id}/json`);
  const logsExited = await call(socket, 'GET', `/containers/${exiting.Id}/logs?stdout=1&stderr=1&follow=0&tail=20`);

  const missing = await call(socket, 'GET', `/containers/ark-job-${randomUUID()}/json`);
  const missingVolume = await call(socket, 'GET', `/volumes/ark-job-${randomUUID()}`);
  for (const id of [created.Id, exiting.Id]) await json(socket, 'DELETE', `/containers/${id}?force=1&v=0`);
  for (const volume of [name, exitingName]) await json(socket, 'DELETE', `/volumes/${volume}`);

  const recorded = {
    about:
      'Docker Engine API answers recorded by host-agent/scripts/record-docker-answers.ts from the private dockerd of test/harness/dockerd.ts; replayed by RecordedContainerRuntime.',
    engine: { Version: version.Version, ApiVersion: version.ApiVersion, Os: version.Os, Arch: version.Arch },
    engine_info: {
      Runtimes: info.Runtimes,
      DefaultRuntime: info.DefaultRuntime,
      SecurityOptions: info.SecurityOptions,
      CgroupVersion: info.CgroupVersion,
      CgroupDriver: info.CgroupDriver,
    },
    image: { reference: image.digestRef, repository, digest: image.digest },
    pull: { status: pull.status, events: lines(pull.body) },
    pull_unknown_digest: {
      digest: unknownDigest,
      status: pullUnknown.status,
      events: pullUnknown.status < 300 ? lines(pullUnknown.body) : [],
      body: pullUnknown.status < 300 ? null : JSON.parse(pullUnknown.body.toString()),
    },
    image_inspect: imageInspect,
    volume_create: volumeCreate,
    volume_inspect: volumeInspect,
    volume_missing: { status: missingVolume.status, body: JSON.parse(missingVolume.body.toString()) },
    container_create: created,
    container_created: inspectCreated,
    container_running: inspectRunning,
    container_stats: stats,
    container_size: { SizeRw: inspectSize.SizeRw, SizeRootFs: inspectSize.SizeRootFs },
    container_start_again: { status: startAgain.status },
    container_list: list,
    container_stopped: inspectStopped,
    container_stop_again: { status: stopAgain.status },
    container_logs_stopped_base64: logsStopped.body.toString('base64'),
    container_archive_workspace_base64: archive.body.toString('base64'),
    container_exited: inspectExited,
    container_logs_exited_base64: logsExited.body.toString('base64'),
    container_missing: { status: missing.status, body: JSON.parse(missing.body.toString()) },
  };
  await writeFile(output, `${JSON.stringify(recorded, null, 2)}\n`);
  console.info(`recorded ${output}`);
} finally {
  await image.registry.stop();
  await daemon.stop();
}
