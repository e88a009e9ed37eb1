// Docker's container inspect answer (GET /containers/{id}/json) as the supervisor needs it. Shared by
// DockerRuntime and the recorded double, so recorded answers go through the same parser as live ones.
import type { ContainerState } from './container-runtime.js';

/** The fields of Docker's inspect answer that are read; the rest of the document is ignored. */
export type DockerInspectAnswer = {
  Id: string;
  Name: string;
  State: { Status: string; Running: boolean; StartedAt?: string; FinishedAt?: string; ExitCode?: number };
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
    labels: info.Config.Labels ?? {},
  };
}
