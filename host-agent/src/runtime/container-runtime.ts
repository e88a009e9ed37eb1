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

/**
 * The capabilities a job's container keeps; Docker's default set less NET_RAW (raw sockets: forged packets, ARP
 * games on a shared network), MKNOD (device nodes), AUDIT_WRITE, SETFCAP, SETPCAP and SYS_CHROOT. What is left is
 * what root inside a container needs for ordinary work: installing packages (apt switches to its own user and chowns
 * its files), fixing file ownership and modes in the volume, binding ports under 1024, signalling its own processes.
 * The agent's SSH and SFTP paths need none of them: they run `docker exec` from the host or read the volume there.
 */
export const JOB_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'NET_BIND_SERVICE'] as const;

/** Docker's HostConfig figures for one job's limits (host-agent/src/jobs/job-limits.ts works them out). */
export type ContainerLimits = {
  /** 1e9 is one CPU. */
  nanoCpus: number;
  /** Memory, and the same figure as memory plus swap: no swap beyond it. */
  memoryBytes: number;
  pids: number;
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
  /**
   * A user-defined Docker network to attach to instead of the engine's default one (with `bridge`): the host's own,
   * e.g. an internal one or one with its own egress rules. Ignored with host networking.
   */
  networkName?: string;
  /** CPU, memory and pids limits; absent: none (every job container the agent creates has them). */
  limits?: ContainerLimits;
  /** An OCI runtime the engine knows (runsc for gVisor, kata-runtime for Kata); absent: the engine's default. */
  runtime?: string;
};

/** What the engine offers to confine containers beyond namespaces and cgroups (`docker info`). */
export type EngineIsolation = {
  /** The OCI runtimes registered with the engine (runc always; runsc, kata-runtime, ... when installed). */
  runtimes: string[];
  defaultRuntime: string;
  /** The engine remaps container users into a user namespace (dockerd --userns-remap). */
  userNamespaceRemap: boolean;
  /** The engine itself runs without root (rootless Docker). */
  rootless: boolean;
};

/** A running container's counters as the engine reports them (one stats reading). */
export type ContainerUsage = {
  /** Processes and threads in the container now. */
  pids?: number;
  /**
   * Bytes sent out of the container's network interfaces since it started, all interfaces summed; undefined when it
   * has none of its own (host networking shares the host's, whose counters are not the job's).
   */
  networkTxBytes?: number;
  memoryBytes?: number;
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
  /** Docker says the kernel's OOM killer struck inside the container (set when it exited). */
  oomKilled?: boolean;
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

/** A follow of a container's output (job logs, issue 25 item 2). */
export type FollowLogsOptions = {
  /** Only entries written after this time: Docker's `since`, seconds with up to nine decimals ("1700000000.123456789"). */
  since?: string;
  /** Ends the follow. */
  signal?: AbortSignal;
};

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
  /**
   * The container's stdout and stderr from `since` on, multiplexed (docker-stream.ts forEachFrame), each entry
   * prefixed with its RFC 3339 timestamp; it follows a running container and ends when the container stops.
   */
  followLogs(id: string, options: FollowLogsOptions): Promise<Readable>;
  /** A tar stream of a path inside a (possibly stopped) container. */
  exportPath(containerId: string, path: string, signal?: AbortSignal): Promise<Readable>;
  /** The engine's runtimes and security options. */
  engineIsolation(): Promise<EngineIsolation>;
  /** One reading of a running container's counters; undefined when no such container exists. */
  containerUsage(id: string): Promise<ContainerUsage | undefined>;
  /** The size of the container's writable layer (what it wrote outside its volumes); undefined when unknown. */
  containerWritableBytes(id: string): Promise<number | undefined>;
  /** How many times the kernel's OOM killer struck inside the container in [since, until). */
  oomKillsBetween(id: string, since: Date, until: Date): Promise<number>;
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
