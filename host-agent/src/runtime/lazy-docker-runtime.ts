// A ContainerRuntime that loads the Docker client (dockerode, and ssh2 through docker-modem) on its first call.
// An idle agent with no jobs never calls Docker, so it never pays the memory for that client.
import type { Readable } from 'node:stream';
import type {
  ContainerRuntime,
  ContainerSpec,
  ContainerState,
  ContainerUsage,
  EngineIsolation,
  ExecRequest,
  ExecSession,
  FollowLogsOptions,
  LogOptions,
  PulledImage,
  PullOptions,
} from './container-runtime.js';
import type { DockerRuntimeOptions } from './docker-runtime.js';

export class LazyDockerRuntime implements ContainerRuntime {
  private readonly options: DockerRuntimeOptions;
  private loading: Promise<ContainerRuntime> | undefined;

  constructor(options: DockerRuntimeOptions = {}) {
    this.options = options;
  }

  /** The real runtime, created once; a failed load is retried on the next call. */
  private runtime(): Promise<ContainerRuntime> {
    this.loading ??= import('./docker-runtime.js').then(
      ({ DockerRuntime }) => new DockerRuntime(this.options),
      (error: unknown) => {
        this.loading = undefined;
        throw error;
      },
    );
    return this.loading;
  }

  async pullImage(reference: string, options?: PullOptions): Promise<PulledImage> {
    return (await this.runtime()).pullImage(reference, options);
  }
  async ensureVolume(name: string, labels: Record<string, string>): Promise<void> {
    return (await this.runtime()).ensureVolume(name, labels);
  }
  async volumeMountpoint(name: string): Promise<string | undefined> {
    return (await this.runtime()).volumeMountpoint(name);
  }
  async removeVolume(name: string): Promise<void> {
    return (await this.runtime()).removeVolume(name);
  }
  async createContainer(spec: ContainerSpec): Promise<string> {
    return (await this.runtime()).createContainer(spec);
  }
  async startContainer(id: string): Promise<void> {
    return (await this.runtime()).startContainer(id);
  }
  async inspectContainer(idOrName: string): Promise<ContainerState | undefined> {
    return (await this.runtime()).inspectContainer(idOrName);
  }
  async listContainers(labelKey: string): Promise<ContainerState[]> {
    return (await this.runtime()).listContainers(labelKey);
  }
  async exec(containerId: string, request: ExecRequest): Promise<ExecSession> {
    return (await this.runtime()).exec(containerId, request);
  }
  async stopContainer(id: string, graceS: number): Promise<void> {
    return (await this.runtime()).stopContainer(id, graceS);
  }
  async removeContainer(id: string): Promise<void> {
    return (await this.runtime()).removeContainer(id);
  }
  async containerLogs(id: string, options: LogOptions): Promise<string> {
    return (await this.runtime()).containerLogs(id, options);
  }
  async followLogs(id: string, options: FollowLogsOptions): Promise<Readable> {
    return (await this.runtime()).followLogs(id, options);
  }
  async exportPath(containerId: string, path: string, signal?: AbortSignal): Promise<Readable> {
    return (await this.runtime()).exportPath(containerId, path, signal);
  }
  async engineIsolation(): Promise<EngineIsolation> {
    return (await this.runtime()).engineIsolation();
  }
  async containerUsage(id: string): Promise<ContainerUsage | undefined> {
    return (await this.runtime()).containerUsage(id);
  }
  async containerWritableBytes(id: string): Promise<number | undefined> {
    return (await this.runtime()).containerWritableBytes(id);
  }
  async oomKillsBetween(id: string, since: Date, until: Date): Promise<number> {
    return (await this.runtime()).oomKillsBetween(id, since, until);
  }
}
