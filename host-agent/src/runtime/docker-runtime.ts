// ContainerRuntime on a Docker engine through dockerode. Every call is bounded by a timeout; the
// pull has its own overall and stall limits, and attached exec streams are left unbounded because
// an interactive shell may idle for hours. The create body (docker-create-options.ts) and the exec session over its
// hijacked stream (docker-exec-session.ts) live beside it.
import type { Duplex, Readable } from 'node:stream';
import Docker from 'dockerode';
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
} from './container-runtime.js';
import { containerCreateOptions } from './docker-create-options.js';
import { execSession } from './docker-exec-session.js';
import {
  containerStateFromInspect,
  containerUsageFromStats,
  type DockerInfoAnswer,
  type DockerStatsAnswer,
  engineIsolationFromInfo,
} from './docker-inspect.js';
import { demultiplexBuffer } from './docker-stream.js';
import { formatDigestReference, parseDigestReference, repoDigestsMatch } from './image-reference.js';
import { type PullEvent, PullProgressTracker } from './pull-progress.js';

export type DockerRuntimeOptions = {
  /** The engine's unix socket; ignored when `docker` is given. */
  socketPath?: string;
  docker?: Docker;
  /** Bound on every call but pulls and attached streams. */
  callTimeoutMs?: number;
  /** Bound on a whole pull. */
  pullTimeoutMs?: number;
  /** A pull that reports nothing for this long is abandoned. */
  pullStallTimeoutMs?: number;
};

export const DOCKER_CALL_TIMEOUT_MS_DEFAULT = 30_000;
export const DOCKER_PULL_TIMEOUT_MS_DEFAULT = 60 * 60_000;
export const DOCKER_PULL_STALL_TIMEOUT_MS_DEFAULT = 5 * 60_000;
/** Longest pull-stream line parsed; Docker's are a few hundred bytes. */
const PULL_LINE_MAX_BYTES = 64 * 1024;
const ERROR_TEXT_MAX_CHARS = 500;
/** Bound on an events answer read for OOM kills; each event is a few hundred bytes. */
const EVENTS_MAX_BYTES = 256 * 1024;

type DockerError = Error & { statusCode?: number; json?: { message?: string } };

function statusOf(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null ? (error as DockerError).statusCode : undefined;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return ((error as DockerError).json?.message ?? error.message).slice(0, ERROR_TEXT_MAX_CHARS);
  return String(error).slice(0, ERROR_TEXT_MAX_CHARS);
}

/** dockerode passes `abortSignal` through to the HTTP request; its typings do not know the option. */
function signalOption(abortSignal: AbortSignal): Record<string, unknown> {
  return { abortSignal };
}

export class DockerRuntime implements ContainerRuntime {
  readonly docker: Docker;
  private readonly callTimeoutMs: number;
  private readonly pullTimeoutMs: number;
  private readonly pullStallTimeoutMs: number;
  private readonly socketPath: string | undefined;

  constructor(options: DockerRuntimeOptions = {}) {
    this.socketPath = options.docker === undefined ? options.socketPath : undefined;
    this.docker = options.docker ?? new Docker(options.socketPath === undefined ? undefined : { socketPath: options.socketPath });
    this.callTimeoutMs = options.callTimeoutMs ?? DOCKER_CALL_TIMEOUT_MS_DEFAULT;
    this.pullTimeoutMs = options.pullTimeoutMs ?? DOCKER_PULL_TIMEOUT_MS_DEFAULT;
    this.pullStallTimeoutMs = options.pullStallTimeoutMs ?? DOCKER_PULL_STALL_TIMEOUT_MS_DEFAULT;
  }

  /** Runs one Docker call with an abort signal that fires at the timeout (or with `outer`). */
  private async call<T>(
    what: string,
    run: (signal: AbortSignal) => Promise<T>,
    timeoutMs = this.callTimeoutMs,
    outer?: AbortSignal,
  ): Promise<T> {
    const controller = new AbortController();
    const timeoutError = new ContainerRuntimeError('DOCKER_TIMEOUT', `${what} took longer than ${timeoutMs} ms`);
    const timer = setTimeout(() => controller.abort(timeoutError), timeoutMs);
    const onOuterAbort = () => controller.abort(outer?.reason);
    if (outer?.aborted) onOuterAbort();
    outer?.addEventListener('abort', onOuterAbort, { once: true });
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(controller.signal.reason instanceof Error ? controller.signal.reason : new Error(`${what} aborted`));
      if (controller.signal.aborted) fail();
      controller.signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => undefined);
    try {
      return await Promise.race([run(controller.signal), aborted]);
    } catch (error) {
      if (controller.signal.aborted) {
        throw controller.signal.reason instanceof Error
          ? controller.signal.reason
          : new ContainerRuntimeError('DOCKER_FAILED', `${what} aborted`);
      }
      if (error instanceof ContainerRuntimeError) throw error;
      // No engine at the socket says more to a host (and a renter's job event) than the errno alone.
      const code = typeof error === 'object' && error !== null ? (error as NodeJS.ErrnoException).code : undefined;
      const unreachable = code === 'ENOENT' || code === 'ECONNREFUSED' || code === 'EACCES';
      const where = this.socketPath === undefined ? '' : ` at ${this.socketPath}`;
      const message = unreachable
        ? `the Docker engine${where} is unreachable (${code}): ${what} failed`
        : `${what} failed: ${messageOf(error)}`;
      const wrapped = new ContainerRuntimeError('DOCKER_FAILED', message, { cause: error });
      (wrapped as DockerError).statusCode = statusOf(error);
      throw wrapped;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuterAbort);
    }
  }

  async pullImage(reference: string, options: PullOptions = {}): Promise<PulledImage> {
    const parsed = parseDigestReference(reference);
    if (parsed === undefined) {
      throw new ContainerRuntimeError('IMAGE_REFERENCE_INVALID', `image ${reference.slice(0, 200)} is not named by a sha256 digest`);
    }
    // Content named by digest is immutable: an image already recorded under it needs no pull.
    const canonical = formatDigestReference(parsed);
    const present = await this.inspectImage(canonical);
    if (present !== undefined && repoDigestsMatch(parsed, present.repoDigests)) {
      options.onProgress?.(100);
      return { ...present, pulled: false };
    }
    await this.pullStream(parsed.repository, parsed.digest, options);
    const image = await this.inspectImage(canonical);
    if (image === undefined || !repoDigestsMatch(parsed, image.repoDigests)) {
      throw new ContainerRuntimeError(
        'IMAGE_DIGEST_MISMATCH',
        `pulled image does not carry digest ${parsed.digest} (repo digests: ${(image?.repoDigests ?? []).join(', ').slice(0, 300)})`,
      );
    }
    return { ...image, pulled: true };
  }

  private async inspectImage(reference: string): Promise<{ id: string; repoDigests: string[]; sizeBytes?: number } | undefined> {
    try {
      const info = await this.call('image inspect', (abortSignal) => this.docker.getImage(reference).inspect(signalOption(abortSignal)));
      return {
        id: info.Id,
        repoDigests: info.RepoDigests ?? [],
        ...(typeof info.Size === 'number' && Number.isFinite(info.Size) ? { sizeBytes: info.Size } : {}),
      };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  private async pullStream(repository: string, digest: string, options: PullOptions): Promise<void> {
    const controller = new AbortController();
    let failure: Error | undefined;
    const abort = (error: Error) => {
      failure ??= error;
      controller.abort(error);
    };
    const overall = setTimeout(
      () => abort(new ContainerRuntimeError('DOCKER_TIMEOUT', `pull took longer than ${this.pullTimeoutMs} ms`)),
      this.pullTimeoutMs,
    );
    let stall: NodeJS.Timeout | undefined;
    const armStall = () => {
      clearTimeout(stall);
      stall = setTimeout(
        () => abort(new ContainerRuntimeError('DOCKER_TIMEOUT', `pull reported nothing for ${this.pullStallTimeoutMs} ms`)),
        this.pullStallTimeoutMs,
      );
    };
    const onOuterAbort = () => abort(options.signal?.reason instanceof Error ? options.signal.reason : new Error('pull aborted'));
    if (options.signal?.aborted) onOuterAbort();
    options.signal?.addEventListener('abort', onOuterAbort, { once: true });
    armStall();
    try {
      const stream = (await this.call(
        'image pull',
        (abortSignal) => this.docker.createImage({ fromImage: repository, tag: digest, ...signalOption(abortSignal) }) as Promise<Readable>,
        this.callTimeoutMs,
        controller.signal,
      )) as Readable;
      const tracker = new PullProgressTracker();
      let lastPercent = -1;
      await new Promise<void>((resolve, reject) => {
        let buffered = '';
        const handleLine = (line: string) => {
          if (line.trim() === '') return;
          let event: PullEvent;
          try {
            event = JSON.parse(line) as PullEvent;
          } catch {
            return;
          }
          if (event.error !== undefined || event.errorDetail?.message !== undefined) {
            abort(
              new ContainerRuntimeError(
                'IMAGE_PULL_FAILED',
                `pull failed: ${(event.error ?? event.errorDetail?.message ?? '').slice(0, ERROR_TEXT_MAX_CHARS)}`,
              ),
            );
            return;
          }
          const percent = tracker.apply(event);
          if (percent !== lastPercent) {
            lastPercent = percent;
            options.onProgress?.(percent);
          }
        };
        controller.signal.addEventListener('abort', () => stream.destroy(), { once: true });
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          armStall();
          buffered += chunk;
          let newline = buffered.indexOf('\n');
          while (newline >= 0) {
            handleLine(buffered.slice(0, newline));
            buffered = buffered.slice(newline + 1);
            newline = buffered.indexOf('\n');
          }
          if (buffered.length > PULL_LINE_MAX_BYTES) buffered = '';
        });
        stream.once('end', () => {
          handleLine(buffered);
          if (failure !== undefined) reject(failure);
          else resolve();
        });
        stream.once('error', (error) =>
          reject(failure ?? new ContainerRuntimeError('IMAGE_PULL_FAILED', `pull failed: ${messageOf(error)}`)),
        );
        stream.once('close', () => {
          if (failure !== undefined) reject(failure);
        });
      });
      options.onProgress?.(100);
    } catch (error) {
      if (failure !== undefined) throw failure;
      if (error instanceof ContainerRuntimeError && error.code === 'DOCKER_FAILED') {
        throw new ContainerRuntimeError('IMAGE_PULL_FAILED', error.message, { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(overall);
      clearTimeout(stall);
      options.signal?.removeEventListener('abort', onOuterAbort);
    }
  }

  async ensureVolume(name: string, labels: Record<string, string>): Promise<void> {
    // Creating an existing local volume returns it unchanged.
    await this.call('volume create', (abortSignal) =>
      this.docker.createVolume({ Name: name, Labels: labels, ...signalOption(abortSignal) }),
    );
  }

  async volumeMountpoint(name: string): Promise<string | undefined> {
    try {
      const info = await this.call('volume inspect', (abortSignal) => this.docker.getVolume(name).inspect(signalOption(abortSignal)));
      return info.Mountpoint;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async removeVolume(name: string): Promise<void> {
    try {
      await this.call('volume remove', (abortSignal) => this.docker.getVolume(name).remove(signalOption(abortSignal)));
    } catch (error) {
      if (statusOf(error) === 404) return;
      throw error;
    }
  }

  async createContainer(spec: ContainerSpec): Promise<string> {
    const created = await this.call('container create', (abortSignal) =>
      this.docker.createContainer({ ...containerCreateOptions(spec), ...signalOption(abortSignal) } as Docker.ContainerCreateOptions),
    );
    return created.id;
  }

  async startContainer(id: string): Promise<void> {
    try {
      await this.call('container start', (abortSignal) => this.docker.getContainer(id).start(signalOption(abortSignal)));
    } catch (error) {
      if (statusOf(error) === 304) return;
      if (statusOf(error) === 404) throw new ContainerRuntimeError('CONTAINER_NOT_FOUND', `container ${id} does not exist`);
      throw error;
    }
  }

  async inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    try {
      const info = await this.call('container inspect', (abortSignal) =>
        this.docker.getContainer(idOrName).inspect(signalOption(abortSignal)),
      );
      return containerStateFromInspect(info);
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async listContainers(labelKey: string): Promise<ContainerState[]> {
    const list = await this.call('container list', (abortSignal) =>
      this.docker.listContainers({ all: true, filters: { label: [labelKey] }, ...signalOption(abortSignal) }),
    );
    const states: ContainerState[] = [];
    for (const entry of list) {
      const state = await this.inspectContainer(entry.Id);
      if (state !== undefined) states.push(state);
    }
    return states;
  }

  async exec(containerId: string, request: ExecRequest): Promise<ExecSession> {
    const container = this.docker.getContainer(containerId);
    const exec = await this.call('exec create', (abortSignal) =>
      container.exec({
        Cmd: [...request.command],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: request.tty,
        ...(request.env !== undefined ? { Env: [...request.env] } : {}),
        ...(request.workingDir !== undefined ? { WorkingDir: request.workingDir } : {}),
        ...(request.tty && request.rows !== undefined && request.cols !== undefined ? { ConsoleSize: [request.rows, request.cols] } : {}),
        ...signalOption(abortSignal),
      } as Docker.ExecCreateOptions),
    );
    const stream = (await this.call('exec start', () => exec.start({ hijack: true, stdin: true, Tty: request.tty }))) as Duplex;
    return execSession(stream, request.tty, {
      inspect: () => this.call('exec inspect', (abortSignal) => exec.inspect(signalOption(abortSignal))),
      resize: (rows, cols) => this.call('exec resize', (abortSignal) => exec.resize({ h: rows, w: cols, ...signalOption(abortSignal) })),
    });
  }

  async stopContainer(id: string, graceS: number): Promise<void> {
    try {
      await this.call(
        'container stop',
        (abortSignal) => this.docker.getContainer(id).stop({ t: graceS, ...signalOption(abortSignal) }),
        this.callTimeoutMs + graceS * 1000,
      );
    } catch (error) {
      // 304: already stopped; 404: already gone.
      if (statusOf(error) === 304 || statusOf(error) === 404) return;
      throw error;
    }
  }

  async removeContainer(id: string): Promise<void> {
    try {
      await this.call('container remove', (abortSignal) =>
        this.docker.getContainer(id).remove({ force: true, v: false, ...signalOption(abortSignal) }),
      );
    } catch (error) {
      if (statusOf(error) === 404) return;
      throw error;
    }
  }

  async containerLogs(id: string, options: LogOptions): Promise<string> {
    const raw = await this.call('container logs', (abortSignal) =>
      this.docker
        .getContainer(id)
        .logs({ stdout: true, stderr: true, follow: false, tail: options.tailLines, ...signalOption(abortSignal) }),
    );
    const buffer = Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw));
    const text = demultiplexBuffer(buffer).toString('utf8');
    return text.length > options.maxBytes ? text.slice(text.length - options.maxBytes) : text;
  }

  async followLogs(id: string, options: FollowLogsOptions): Promise<Readable> {
    // Only the request is bounded by the call timeout; the stream itself lasts as long as the container runs.
    const stream = (await this.call('container logs follow', () =>
      this.docker.getContainer(id).logs({
        stdout: true,
        stderr: true,
        follow: true,
        timestamps: true,
        ...(options.since === undefined ? {} : { since: options.since as unknown as number }),
      }),
    )) as unknown as Readable;
    if (options.signal !== undefined) {
      if (options.signal.aborted) stream.destroy();
      else options.signal.addEventListener('abort', () => stream.destroy(), { once: true });
    }
    return stream;
  }

  async exportPath(containerId: string, path: string, signal?: AbortSignal): Promise<Readable> {
    return (await this.call(
      'container archive',
      (abortSignal) => this.docker.getContainer(containerId).getArchive({ path, ...signalOption(abortSignal) }),
      this.callTimeoutMs,
      signal,
    )) as Readable;
  }

  async engineIsolation(): Promise<EngineIsolation> {
    // dockerode's info() takes the abort signal at runtime; its typings do not say so.
    const info = this.docker.info as unknown as (options: Record<string, unknown>) => Promise<DockerInfoAnswer>;
    return engineIsolationFromInfo(await this.call('engine info', (abortSignal) => info.call(this.docker, signalOption(abortSignal))));
  }

  async containerUsage(id: string): Promise<ContainerUsage | undefined> {
    try {
      // One reading, without waiting for a second one to work out CPU rates.
      const answer = (await this.call('container stats', (abortSignal) =>
        this.docker.getContainer(id).stats({ stream: false, 'one-shot': true, ...signalOption(abortSignal) } as { stream: false }),
      )) as unknown as DockerStatsAnswer;
      return containerUsageFromStats(answer);
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async containerWritableBytes(id: string): Promise<number | undefined> {
    try {
      // size=true makes the engine walk the writable layer: the one costly call here, made at the disk interval only.
      const info = (await this.call('container inspect with size', (abortSignal) =>
        this.docker.getContainer(id).inspect({ size: true, ...signalOption(abortSignal) } as Docker.ContainerInspectOptions),
      )) as unknown as { SizeRw?: number };
      return typeof info.SizeRw === 'number' && Number.isFinite(info.SizeRw) && info.SizeRw >= 0 ? info.SizeRw : undefined;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async oomKillsBetween(id: string, since: Date, until: Date): Promise<number> {
    // A bounded window (until is given), so the engine answers what it has and ends the stream.
    const stream = (await this.call('events', (abortSignal) =>
      this.docker.getEvents({
        // Seconds, with the milliseconds as a fraction: the engine reads both.
        since: since.getTime() / 1000,
        until: until.getTime() / 1000,
        filters: { type: ['container'], event: ['oom'], container: [id] },
        ...signalOption(abortSignal),
      } as Docker.GetEventsOptions),
    )) as unknown as Readable;
    return this.call('events read', async (abortSignal) => {
      let text = '';
      abortSignal.addEventListener('abort', () => stream.destroy(), { once: true });
      for await (const chunk of stream) {
        text += String(chunk);
        if (text.length > EVENTS_MAX_BYTES) {
          stream.destroy();
          break;
        }
      }
      return text.split('\n').filter((line) => line.includes('"oom"')).length;
    });
  }
}
