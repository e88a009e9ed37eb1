// The narrow interface between the job supervisor and the container engine. DockerRuntime is the
// real one; everything the supervisor and the SSH server need from Docker goes through here.
import type { Readable, Writable } from 'node:stream';

/** `host` in tests (container ports are host ports), `bridge` with port bindings in production. */
export type NetworkMode = 'host' | 'bridge' | 'none';

export type PortBinding = {
  containerPort: number;
  hostPort: number;
  /** Host address the published port listens on; 0.0.0.0 when absent. */
  hostIp?: string;
};

export type ContainerSpec = {
  name: string;
  /** `name@sha256:<64 hex>`: containers only ever run images named by digest. */
  image: string;
  labels: Record<string, string>;
  env: Record<string, string>;
  command?: readonly string[];
  volumeName: string;
  volumeMountPath: string;
  networkMode: NetworkMode;
  /** Published ports; ignored with host networking, where the container's ports are the host's. */
  portBindings: readonly PortBinding[];
  /** GPU device IDs (UUIDs or indexes) for a Docker device request; empty means no device request at all. */
  gpuDeviceIds: readonly string[];
};

/** What the supervisor needs to know about one container. */
export type ContainerState = {
  id: string;
  name: string;
  /** Docker's State.Status: created, running, paused, restarting, removing, exited, dead. */
  status: string;
  running: boolean;
  startedAt?: Date;
  finishedAt?: Date;
  exitCode?: number;
  labels: Record<string, string>;
};

export type PulledImage = {
  id: string;
  repoDigests: string[];
  /** False when the image was already present under its digest and no pull happened. */
  pulled: boolean;
  /** The image's size as the engine reports it (image inspect's Size), where it reports one. */
  sizeBytes?: number;
};

export type PullOptions = {
  /** Whole-pull progress, 0..100, as layers download and extract. */
  onProgress?: (percent: number) => void;
  signal?: AbortSignal;
};

export type ExecRequest = {
  command: readonly string[];
  tty: boolean;
  env?: readonly string[];
  workingDir?: string;
  rows?: number;
  cols?: number;
};

/** A process started with `docker exec`, attached. With a tty, all output arrives on stdout. */
export type ExecSession = {
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
  resize(rows: number, cols: number): Promise<void>;
  /** The exit code once the process ended and its output was read; undefined if Docker does not say. */
  exited: Promise<number | undefined>;
  /** Drops the attachment (the process sees its stdin close). */
  close(): void;
};

export type LogOptions = { tailLines: number; maxBytes: number };

export interface ContainerRuntime {
  /** Pulls `name@sha256:...` unless already present, and refuses an image whose digest does not match. */
  pullImage(reference: string, options?: PullOptions): Promise<PulledImage>;
  ensureVolume(name: string, labels: Record<string, string>): Promise<void>;
  /** The volume's directory on the host, or undefined when the volume does not exist. */
  volumeMountpoint(name: string): Promise<string | undefined>;
  /** Removes a volume; a missing one is not an error. */
  removeVolume(name: string): Promise<void>;
  createContainer(spec: ContainerSpec): Promise<string>;
  startContainer(id: string): Promise<void>;
  /** Undefined when no such container exists. */
  inspectContainer(idOrName: string): Promise<ContainerState | undefined>;
  /** Every container (running or not) carrying this label key. */
  listContainers(labelKey: string): Promise<ContainerState[]>;
  exec(containerId: string, request: ExecRequest): Promise<ExecSession>;
  /** SIGTERM, then SIGKILL after graceS; a stopped or missing container is not an error. */
  stopContainer(id: string, graceS: number): Promise<void>;
  /** Removes a container by force, keeping its volumes; a missing one is not an error. */
  removeContainer(id: string): Promise<void>;
  /** The last lines of the container's output (stdout and stderr), bounded. */
  containerLogs(id: string, options: LogOptions): Promise<string>;
  /** A tar stream of a path inside a (possibly stopped) container. */
  exportPath(containerId: string, path: string, signal?: AbortSignal): Promise<Readable>;
}

export type ContainerRuntimeErrorCode =
  | 'IMAGE_REFERENCE_INVALID'
  | 'IMAGE_DIGEST_MISMATCH'
  | 'IMAGE_PULL_FAILED'
  | 'DOCKER_TIMEOUT'
  | 'DOCKER_FAILED'
  | 'CONTAINER_NOT_FOUND';

export class ContainerRuntimeError extends Error {
  readonly code: ContainerRuntimeErrorCode;
  constructor(code: ContainerRuntimeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ContainerRuntimeError';
    this.code = code;
  }
}
