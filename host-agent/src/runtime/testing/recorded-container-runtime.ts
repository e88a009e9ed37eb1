// A ContainerRuntime for unit tests that replays answers recorded from a real dockerd
// (docker-answers.json, written by scripts/record-docker-answers.ts). Each container walks the
// recorded documents, created, running, stopped (SIGKILL after the grace, exit 137) or exited on its
// own (exit 3, with its recorded output), and every inspect goes through the parser DockerRuntime
// uses. Only identity and time are rewritten: ids, names and labels from the spec, and StartedAt and
// FinishedAt from the injected clock, so meter arithmetic is exact under a ManualClock.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Clock } from '@ark/shared';
import {
  type ContainerRuntime,
  ContainerRuntimeError,
  type ContainerSpec,
  type ContainerState,
  type ContainerUsage,
  type EngineIsolation,
  type ExecRequest,
  type ExecSession,
  type FollowLogsOptions,
  type LogOptions,
  type PulledImage,
  type PullOptions,
} from '../container-runtime.js';
import {
  containerStateFromInspect,
  containerUsageFromStats,
  type DockerInfoAnswer,
  type DockerInspectAnswer,
  type DockerStatsAnswer,
  engineIsolationFromInfo,
} from '../docker-inspect.js';
import { demultiplexBuffer } from '../docker-stream.js';
import { formatDigestReference, parseDigestReference } from '../image-reference.js';
import { type PullEvent, PullProgressTracker } from '../pull-progress.js';

/** Inspect documents as Docker sent them: the parsed fields plus everything else it says. */
type RecordedInspect = DockerInspectAnswer & {
  Created: string;
  Config: DockerInspectAnswer['Config'] & { Image?: string; Env?: string[]; Cmd?: string[] };
} & Record<string, unknown>;

export type DockerAnswers = {
  engine: { Version: string; ApiVersion: string };
  image: { reference: string; repository: string; digest: string };
  pull: { status: number; events: PullEvent[] };
  pull_unknown_digest: { digest: string; status: number; body: { message: string } };
  image_inspect: { Id: string; RepoDigests: string[]; Size?: number };
  volume_inspect: { Name: string; Mountpoint: string; Labels: Record<string, string> } & Record<string, unknown>;
  volume_missing: { status: number; body: { message: string } };
  container_created: RecordedInspect;
  container_running: RecordedInspect;
  engine_info: DockerInfoAnswer;
  container_stats: DockerStatsAnswer;
  container_size: { SizeRw?: number };
  container_stopped: RecordedInspect;
  container_exited: RecordedInspect;
  container_logs_stopped_base64: string;
  container_logs_exited_base64: string;
  container_archive_workspace_base64: string;
  container_missing: { status: number; body: { message: string } };
};

let cachedAnswers: DockerAnswers | undefined;

/** The recorded answers shipped beside this file. */
export function recordedDockerAnswers(): DockerAnswers {
  cachedAnswers ??= JSON.parse(readFileSync(new URL('./docker-answers.json', import.meta.url), 'utf8')) as DockerAnswers;
  return structuredClone(cachedAnswers);
}

export type RecordedRuntimeMethod = Exclude<keyof ContainerRuntime, never>;

export type RecordedContainerRuntimeOptions = {
  clock: Clock;
  answers?: DockerAnswers;
  /**
   * With it, each volume is a real directory under here and volumeMountpoint answers it (retrieval reads
   * the files in place); without it, the recorded mountpoint, which does not exist on this machine.
   */
  volumeRoot?: string;
};

type SimulatedContainer = {
  answer: RecordedInspect;
  logs: Buffer;
  spec: ContainerSpec;
  /** What a test says the container uses now (stats), and when the OOM killer struck in it. */
  usage: ContainerUsage;
  writableBytes: number;
  oomKills: Date[];
};

export class RecordedContainerRuntime implements ContainerRuntime {
  readonly answers: DockerAnswers;
  /** Every call, in order, with its arguments (specs and options by reference). */
  readonly calls: Array<{ method: RecordedRuntimeMethod; args: unknown[] }> = [];
  /** Digests the registry does not have; a pull of one fails with the recorded 404. */
  readonly missingDigests: Set<string>;
  private readonly clock: Clock;
  private readonly volumeRoot: string | undefined;
  private readonly present = new Set<string>();
  private readonly volumes = new Map<string, { mountpoint: string; labels: Record<string, string> }>();
  private readonly containers = new Map<string, SimulatedContainer>();
  private readonly failures = new Map<RecordedRuntimeMethod, Error[]>();

  constructor(options: RecordedContainerRuntimeOptions) {
    this.clock = options.clock;
    this.answers = options.answers ?? recordedDockerAnswers();
    this.volumeRoot = options.volumeRoot;
    this.missingDigests = new Set([this.answers.pull_unknown_digest.digest]);
    this.isolation = engineIsolationFromInfo(this.answers.engine_info);
  }

  // ---- what happens to containers outside the agent ----

  /** The container's main process ends by itself: the recorded exit (code 3) and its output. */
  exitOnItsOwn(idOrName: string): void {
    const container = this.find(idOrName);
    if (container === undefined) throw new Error(`no container ${idOrName}`);
    const startedAt = container.answer.State.StartedAt;
    container.answer = this.rewrite(this.answers.container_exited, container);
    container.answer.State.StartedAt = startedAt;
    container.answer.State.FinishedAt = this.clock.now().toISOString();
    container.logs = Buffer.from(this.answers.container_logs_exited_base64, 'base64');
  }

  /** What the container uses from now on, as its stats and its writable layer's size would say. */
  setUsage(idOrName: string, usage: ContainerUsage & { writableBytes?: number }): void {
    const container = this.find(idOrName);
    if (container === undefined) throw new Error(`no container ${idOrName}`);
    const { writableBytes, ...stats } = usage;
    container.usage = { ...container.usage, ...stats };
    if (writableBytes !== undefined) container.writableBytes = writableBytes;
  }

  /** The kernel's OOM killer strikes a process in the container now; `exits` when it was the main one. */
  oomKill(idOrName: string, exits = false): void {
    const container = this.find(idOrName);
    if (container === undefined) throw new Error(`no container ${idOrName}`);
    container.oomKills.push(this.clock.now());
    if (!exits) return;
    this.exitOnItsOwn(idOrName);
    container.answer.State.ExitCode = 137;
    container.answer.State.OOMKilled = true;
  }

  /** Someone removed the container behind the agent's back. */
  vanish(idOrName: string): void {
    const container = this.find(idOrName);
    if (container !== undefined) this.containers.delete(container.answer.Id);
  }

  /** The next call of `method` fails as an engine that does not answer would. */
  failNext(method: RecordedRuntimeMethod, error?: Error): void {
    const queued = this.failures.get(method) ?? [];
    queued.push(error ?? new ContainerRuntimeError('DOCKER_FAILED', `the Docker engine is unreachable (ECONNREFUSED): ${method} failed`));
    this.failures.set(method, queued);
  }

  /** The current inspect document of a container, as Docker would send it. */
  inspectAnswer(idOrName: string): RecordedInspect | undefined {
    const container = this.find(idOrName);
    return container === undefined ? undefined : structuredClone(container.answer);
  }

  /** The spec a container was created from. */
  specOf(idOrName: string): ContainerSpec | undefined {
    return this.find(idOrName)?.spec;
  }

  callsOf(method: RecordedRuntimeMethod): unknown[][] {
    return this.calls.filter((call) => call.method === method).map((call) => call.args);
  }

  // ---- ContainerRuntime ----

  async pullImage(reference: string, options: PullOptions = {}): Promise<PulledImage> {
    this.record('pullImage', [reference]);
    const parsed = parseDigestReference(reference);
    if (parsed === undefined) {
      throw new ContainerRuntimeError('IMAGE_REFERENCE_INVALID', `image ${reference.slice(0, 200)} is not named by a sha256 digest`);
    }
    const canonical = formatDigestReference(parsed);
    if (this.present.has(canonical)) {
      options.onProgress?.(100);
      return { id: this.answers.image_inspect.Id, repoDigests: [canonical], pulled: false, ...this.imageSize() };
    }
    if (this.missingDigests.has(parsed.digest)) {
      const message = this.answers.pull_unknown_digest.body.message.replaceAll(this.answers.pull_unknown_digest.digest, parsed.digest);
      throw new ContainerRuntimeError(
        'IMAGE_PULL_FAILED',
        `image pull failed: ${message.replaceAll(this.answers.image.repository, parsed.repository)}`,
      );
    }
    const tracker = new PullProgressTracker();
    let lastPercent = -1;
    for (const event of this.answers.pull.events) {
      // A pull yields between stream chunks; so does this one, so an abort lands mid-pull.
      await new Promise((resolve) => setImmediate(resolve));
      if (options.signal?.aborted) throw new Error('pull aborted');
      const percent = tracker.apply(event);
      if (percent !== lastPercent) {
        lastPercent = percent;
        options.onProgress?.(percent);
      }
    }
    options.onProgress?.(100);
    this.present.add(canonical);
    return { id: this.answers.image_inspect.Id, repoDigests: [canonical], pulled: true, ...this.imageSize() };
  }

  /** The recorded image inspect's Size, as DockerRuntime reports it. */
  private imageSize(): { sizeBytes?: number } {
    const size = this.answers.image_inspect.Size;
    return typeof size === 'number' ? { sizeBytes: size } : {};
  }

  async ensureVolume(name: string, labels: Record<string, string>): Promise<void> {
    this.record('ensureVolume', [name, labels]);
    if (this.volumes.has(name)) return;
    let mountpoint = this.answers.volume_inspect.Mountpoint.replaceAll(this.answers.volume_inspect.Name, name);
    if (this.volumeRoot !== undefined) {
      mountpoint = join(this.volumeRoot, name, '_data');
      await mkdir(mountpoint, { recursive: true });
    }
    this.volumes.set(name, { mountpoint, labels: { ...labels } });
  }

  async volumeMountpoint(name: string): Promise<string | undefined> {
    this.record('volumeMountpoint', [name]);
    return this.volumes.get(name)?.mountpoint;
  }

  async removeVolume(name: string): Promise<void> {
    this.record('removeVolume', [name]);
    if (!this.volumes.delete(name)) return;
    if (this.volumeRoot !== undefined) await rm(join(this.volumeRoot, name), { recursive: true, force: true });
  }

  async createContainer(spec: ContainerSpec): Promise<string> {
    this.record('createContainer', [spec]);
    if (this.find(spec.name) !== undefined) {
      throw new ContainerRuntimeError(
        'DOCKER_FAILED',
        `container create failed: Conflict. The container name "/${spec.name}" is already in use`,
      );
    }
    const id = randomBytes(32).toString('hex');
    const container: SimulatedContainer = {
      answer: this.answers.container_created,
      logs: Buffer.alloc(0),
      spec,
      // What the recorded container reported: its processes, no interface of its own (host networking), its layer.
      usage: containerUsageFromStats(this.answers.container_stats),
      writableBytes: this.answers.container_size.SizeRw ?? 0,
      oomKills: [],
    };
    container.answer = this.rewrite(this.answers.container_created, container, id);
    container.answer.Created = this.clock.now().toISOString();
    this.containers.set(id, container);
    return id;
  }

  async startContainer(id: string): Promise<void> {
    this.record('startContainer', [id]);
    const container = this.find(id);
    if (container === undefined) throw new ContainerRuntimeError('CONTAINER_NOT_FOUND', `container ${id} does not exist`);
    // 304 from Docker: already running.
    if (container.answer.State.Running) return;
    container.answer = this.rewrite(this.answers.container_running, container);
    container.answer.State.StartedAt = this.clock.now().toISOString();
    container.logs = Buffer.from(this.answers.container_logs_stopped_base64, 'base64');
  }

  async inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    this.record('inspectContainer', [idOrName]);
    const container = this.find(idOrName);
    return container === undefined ? undefined : containerStateFromInspect(container.answer);
  }

  async listContainers(labelKey: string): Promise<ContainerState[]> {
    this.record('listContainers', [labelKey]);
    return [...this.containers.values()]
      .filter((container) => container.answer.Config.Labels?.[labelKey] !== undefined)
      .map((container) => containerStateFromInspect(container.answer));
  }

  async exec(containerId: string, request: ExecRequest): Promise<ExecSession> {
    this.record('exec', [containerId, request]);
    throw new ContainerRuntimeError('DOCKER_FAILED', 'exec create failed: exec is not among the recorded answers');
  }

  async stopContainer(id: string, graceS: number): Promise<void> {
    this.record('stopContainer', [id, graceS]);
    const container = this.find(id);
    // 404 and 304 from Docker: gone, or already stopped.
    if (container === undefined || !container.answer.State.Running) return;
    const startedAt = container.answer.State.StartedAt;
    container.answer = this.rewrite(this.answers.container_stopped, container);
    container.answer.State.StartedAt = startedAt;
    container.answer.State.FinishedAt = this.clock.now().toISOString();
  }

  async removeContainer(id: string): Promise<void> {
    this.record('removeContainer', [id]);
    const container = this.find(id);
    if (container !== undefined) this.containers.delete(container.answer.Id);
  }

  async containerLogs(id: string, options: LogOptions): Promise<string> {
    this.record('containerLogs', [id, options]);
    const container = this.find(id);
    if (container === undefined) throw new ContainerRuntimeError('DOCKER_FAILED', `container logs failed: ${this.missingMessage(id)}`);
    const text = demultiplexBuffer(container.logs).toString('utf8');
    return text.length > options.maxBytes ? text.slice(text.length - options.maxBytes) : text;
  }

  /** The recorded output so far, each entry stamped with the clock's time (recordings carry no timestamps), then the end. */
  async followLogs(id: string, options: FollowLogsOptions): Promise<Readable> {
    this.record('followLogs', [id, { since: options.since }]);
    const container = this.find(id);
    if (container === undefined) throw new ContainerRuntimeError('DOCKER_FAILED', `container logs failed: ${this.missingMessage(id)}`);
    const stamp = this.clock.now().toISOString();
    const frames: Buffer[] = [];
    let offset = 0;
    while (offset + 8 <= container.logs.length) {
      const length = container.logs.readUInt32BE(offset + 4);
      const payload = Buffer.concat([Buffer.from(`${stamp} `), container.logs.subarray(offset + 8, offset + 8 + length)]);
      const header = Buffer.alloc(8);
      header[0] = container.logs[offset] as number;
      header.writeUInt32BE(payload.length, 4);
      frames.push(header, payload);
      offset += 8 + length;
    }
    return Readable.from(frames.length === 0 ? [] : [Buffer.concat(frames)]);
  }

  async exportPath(containerId: string, path: string): Promise<Readable> {
    this.record('exportPath', [containerId, path]);
    if (this.find(containerId) === undefined) {
      throw new ContainerRuntimeError('DOCKER_FAILED', `container archive failed: ${this.missingMessage(containerId)}`);
    }
    if (path !== '/workspace') throw new ContainerRuntimeError('DOCKER_FAILED', `container archive failed: ${path} is not recorded`);
    return Readable.from([Buffer.from(this.answers.container_archive_workspace_base64, 'base64')]);
  }

  /** What the recorded engine offers (runc alone); a test may change it. */
  isolation: EngineIsolation;

  async engineIsolation(): Promise<EngineIsolation> {
    this.record('engineIsolation', []);
    return structuredClone(this.isolation);
  }

  async containerUsage(id: string): Promise<ContainerUsage | undefined> {
    this.record('containerUsage', [id]);
    const container = this.find(id);
    return container === undefined ? undefined : { ...container.usage };
  }

  async containerWritableBytes(id: string): Promise<number | undefined> {
    this.record('containerWritableBytes', [id]);
    return this.find(id)?.writableBytes;
  }

  async oomKillsBetween(id: string, since: Date, until: Date): Promise<number> {
    this.record('oomKillsBetween', [id, since, until]);
    const kills = this.find(id)?.oomKills ?? [];
    return kills.filter((at) => at.getTime() >= since.getTime() && at.getTime() < until.getTime()).length;
  }

  // ---- helpers ----

  private record(method: RecordedRuntimeMethod, args: unknown[]): void {
    this.calls.push({ method, args });
    const failure = this.failures.get(method)?.shift();
    if (failure !== undefined) throw failure;
  }

  private find(idOrName: string): SimulatedContainer | undefined {
    const byId = this.containers.get(idOrName);
    if (byId !== undefined) return byId;
    for (const container of this.containers.values()) if (container.answer.Name === `/${idOrName}`) return container;
    return undefined;
  }

  private missingMessage(idOrName: string): string {
    return this.answers.container_missing.body.message.replace(/: .*$/, `: ${idOrName}`);
  }

  /** A recorded document made this container's: its id, name, labels, image, env and command. */
  private rewrite(recorded: RecordedInspect, container: SimulatedContainer, id = container.answer.Id): RecordedInspect {
    const answer = structuredClone(recorded);
    answer.Id = id;
    answer.Name = `/${container.spec.name}`;
    answer.Created = container.answer.Created;
    answer.Config = {
      ...answer.Config,
      Labels: { ...container.spec.labels },
      Image: container.spec.image,
      Env: Object.entries(container.spec.env).map(([key, value]) => `${key}=${value}`),
      ...(container.spec.command !== undefined ? { Cmd: [...container.spec.command] } : {}),
    };
    return answer;
  }
}
