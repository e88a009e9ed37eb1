import { describe, expect, it } from 'vitest';
import { ManualClock } from '@ark/shared';
import { ContainerRuntimeError } from '../container-runtime.js';
import { containerStateFromInspect } from '../docker-inspect.js';
import { RecordedContainerRuntime, recordedDockerAnswers } from './recorded-container-runtime.js';

const spec = (name: string) => ({
  name,
  image: recordedDockerAnswers().image.reference,
  labels: { 'ark.job_id': name },
  env: { GREETING: 'hi' },
  command: ['sleep', '300'],
  volumeName: name,
  volumeMountPath: '/workspace',
  networkMode: 'host' as const,
  portBindings: [],
  gpuDeviceIds: [],
});

describe('the recorded Docker answers', () => {
  it('parse through the same code as live ones, with Docker never-times and exit codes as recorded', () => {
    const answers = recordedDockerAnswers();
    expect(containerStateFromInspect(answers.container_created)).toMatchObject({
      status: 'created',
      running: false,
      startedAt: undefined,
      finishedAt: undefined,
      exitCode: 0,
    });
    const running = containerStateFromInspect(answers.container_running);
    expect(running).toMatchObject({ status: 'running', running: true, exitCode: undefined, finishedAt: undefined });
    expect(running.startedAt).toBeInstanceOf(Date);
    expect(running.labels['ark.managed-by']).toBe('ark-agent');
    expect(containerStateFromInspect(answers.container_stopped)).toMatchObject({ status: 'exited', running: false, exitCode: 137 });
    expect(containerStateFromInspect(answers.container_exited)).toMatchObject({ status: 'exited', running: false, exitCode: 3 });
  });
});

describe('RecordedContainerRuntime', () => {
  it('walks a container through created, running and stopped, stamping times from the clock', async () => {
    const clock = new ManualClock('2030-01-01T00:00:00.000Z');
    const runtime = new RecordedContainerRuntime({ clock });
    const id = await runtime.createContainer(spec('ark-job-a'));
    expect(await runtime.inspectContainer('ark-job-a')).toMatchObject({ id, name: 'ark-job-a', status: 'created', running: false });
    await clock.advance(1_000);
    await runtime.startContainer(id);
    await runtime.startContainer(id);
    const running = await runtime.inspectContainer(id);
    expect(running).toMatchObject({ status: 'running', running: true, labels: { 'ark.job_id': 'ark-job-a' } });
    expect(running?.startedAt?.toISOString()).toBe('2030-01-01T00:00:01.000Z');
    expect((await runtime.listContainers('ark.job_id')).map((state) => state.id)).toEqual([id]);
    await clock.advance(5_000);
    await runtime.stopContainer(id, 10);
    await runtime.stopContainer(id, 10);
    const stopped = await runtime.inspectContainer(id);
    expect(stopped).toMatchObject({ status: 'exited', running: false, exitCode: 137 });
    expect(stopped?.startedAt?.toISOString()).toBe('2030-01-01T00:00:01.000Z');
    expect(stopped?.finishedAt?.toISOString()).toBe('2030-01-01T00:00:06.000Z');
    expect(await runtime.containerLogs(id, { tailLines: 20, maxBytes: 1000 })).toBe('started\n');
    await runtime.removeContainer(id);
    await runtime.removeContainer(id);
    expect(await runtime.inspectContainer(id)).toBeUndefined();
    expect(runtime.callsOf('stopContainer')).toEqual([
      [id, 10],
      [id, 10],
    ]);
  });

  it('replays a container that exits on its own with its recorded output, and one that vanishes', async () => {
    const clock = new ManualClock(0);
    const runtime = new RecordedContainerRuntime({ clock });
    const id = await runtime.createContainer(spec('ark-job-b'));
    await runtime.startContainer(id);
    await clock.advance(2_500);
    runtime.exitOnItsOwn(id);
    const exited = await runtime.inspectContainer(id);
    expect(exited).toMatchObject({ status: 'exited', exitCode: 3, startedAt: new Date(0), finishedAt: new Date(2_500) });
    expect(await runtime.containerLogs(id, { tailLines: 20, maxBytes: 1000 })).toBe('to stderr\nboom do-not-leak-this\n');
    expect(await runtime.containerLogs(id, { tailLines: 20, maxBytes: 8 })).toBe('ak-this\n');
    runtime.vanish(id);
    expect(await runtime.inspectContainer(id)).toBeUndefined();
  });

  it('pulls by digest with growing progress, then finds the image present; refuses tags and unknown digests', async () => {
    const runtime = new RecordedContainerRuntime({ clock: new ManualClock() });
    const reference = runtime.answers.image.reference;
    const progress: number[] = [];
    expect((await runtime.pullImage(reference, { onProgress: (percent) => progress.push(percent) })).pulled).toBe(true);
    expect(progress.at(-1)).toBe(100);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.length).toBeGreaterThan(2);
    expect((await runtime.pullImage(reference)).pulled).toBe(false);
    const unknown = `${runtime.answers.image.repository}@sha256:${'1'.repeat(64)}`;
    await expect(runtime.pullImage(unknown)).rejects.toMatchObject({
      code: 'IMAGE_PULL_FAILED',
      message: expect.stringMatching(/pull failed: manifest for .* not found/),
    });
    await expect(runtime.pullImage('busybox:latest')).rejects.toBeInstanceOf(ContainerRuntimeError);
  });

  it('serves the recorded /workspace archive and volumes, and fails the next call when told to', async () => {
    const runtime = new RecordedContainerRuntime({ clock: new ManualClock() });
    await runtime.ensureVolume('ark-job-c', { 'ark.job_id': 'c' });
    expect(await runtime.volumeMountpoint('ark-job-c')).toMatch(/\/volumes\/ark-job-c\/_data$/);
    await runtime.removeVolume('ark-job-c');
    expect(await runtime.volumeMountpoint('ark-job-c')).toBeUndefined();
    const id = await runtime.createContainer(spec('ark-job-c'));
    const chunks: Buffer[] = [];
    for await (const chunk of await runtime.exportPath(id, '/workspace')) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).includes(Buffer.from('workspace/out/result.txt'))).toBe(true);
    runtime.failNext('inspectContainer');
    await expect(runtime.inspectContainer(id)).rejects.toMatchObject({ code: 'DOCKER_FAILED' });
    expect(await runtime.inspectContainer(id)).toMatchObject({ id });
  });
});
