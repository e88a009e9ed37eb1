// Docker's container inspect answer (GET /containers/{id}/json) as the supervisor needs it. Shared by
// DockerRuntime and the recorded double, so recorded answers go through the same parser as live ones.
import type { ContainerState, ContainerUsage, EngineIsolation } from './container-runtime.js';

/** The fields of Docker's inspect answer that are read; the rest of the document is ignored. */
export type DockerInspectAnswer = {
  Id: string;
  Name: string;
  State: { Status: string; Running: boolean; StartedAt?: string; FinishedAt?: string; ExitCode?: number; OOMKilled?: boolean };
  Config: { Labels?: Record<string, string> | null };
};

export function parseDockerTime(text: string | undefined): Date | undefined {
  // Docker writes 0001-01-01T00:00:00Z for "never".
  if (text === undefined || text === '' || text.startsWith('0001-')) return undefined;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

export function containerStateFromInspect(info: DockerInspectAnswer): ContainerState {
  return {
    id: info.Id,
    name: info.Name.replace(/^\//, ''),
    status: info.State.Status,
    running: info.State.Running,
    startedAt: parseDockerTime(info.State.StartedAt),
    finishedAt: parseDockerTime(info.State.FinishedAt),
    exitCode: info.State.Running ? undefined : info.State.ExitCode,
    ...(info.State.OOMKilled === true ? { oomKilled: true } : {}),
    labels: info.Config.Labels ?? {},
  };
}

/** The fields of Docker's stats answer (GET /containers/{id}/stats?stream=false) that are read. */
export type DockerStatsAnswer = {
  pids_stats?: { current?: number; limit?: number };
  networks?: Record<string, { tx_bytes?: number; rx_bytes?: number }>;
  memory_stats?: { usage?: number };
};

/** A stats answer as the confinement watch needs it; a counter Docker leaves out stays undefined. */
export function containerUsageFromStats(answer: DockerStatsAnswer): ContainerUsage {
  const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
  const interfaces = Object.values(answer.networks ?? {});
  const tx = interfaces.map((network) => network.tx_bytes).filter(finite);
  const pids = answer.pids_stats?.current;
  const memory = answer.memory_stats?.usage;
  return {
    ...(finite(pids) ? { pids } : {}),
    // Host networking: Docker reports no interface of the container's own.
    ...(interfaces.length > 0 ? { networkTxBytes: tx.reduce((sum, bytes) => sum + bytes, 0) } : {}),
    ...(finite(memory) ? { memoryBytes: memory } : {}),
  };
}

/** The fields of Docker's info answer (GET /info) that are read. */
export type DockerInfoAnswer = {
  Runtimes?: Record<string, unknown> | null;
  DefaultRuntime?: string;
  SecurityOptions?: string[] | null;
};

/** SecurityOptions entries look like `name=seccomp,profile=default`, `name=userns`, `name=rootless`. */
export function engineIsolationFromInfo(info: DockerInfoAnswer): EngineIsolation {
  const names = (info.SecurityOptions ?? []).map((option) => /(?:^|,)name=([^,]+)/.exec(option)?.[1] ?? '');
  return {
    runtimes: Object.keys(info.Runtimes ?? {}).sort(),
    defaultRuntime: info.DefaultRuntime ?? 'runc',
    userNamespaceRemap: names.includes('userns'),
    rootless: names.includes('rootless'),
  };
}
