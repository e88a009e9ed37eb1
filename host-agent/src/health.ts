import { statfs } from 'node:fs/promises';
import { request } from 'node:http';

export interface HealthCheckOptions {
  docker: { socketPath: string; required: boolean };
  /** The file system whose free space is checked: the state directory's. */
  diskPath: string;
  minDiskFreeBytes: number;
  timeoutMs?: number;
}

/**
 * The agent's own verdict for its heartbeat: a list of problems, empty when healthy. A machine with a problem
 * is not put live, so only what stops it from running jobs counts.
 */
export async function checkHealth(options: HealthCheckOptions): Promise<string[]> {
  const timeoutMs = options.timeoutMs ?? 2000;
  const problems: string[] = [];
  const [docker, freeBytes] = await Promise.all([
    options.docker.required ? pingDocker(options.docker.socketPath, timeoutMs) : Promise.resolve(null),
    statfs(options.diskPath).then(
      (stats) => stats.bavail * stats.bsize,
      () => undefined,
    ),
  ]);
  if (docker !== null) problems.push(docker);
  if (freeBytes === undefined) problems.push(`cannot read free disk space at ${options.diskPath}`.slice(0, 200));
  else if (freeBytes < options.minDiskFreeBytes) {
    problems.push(`disk nearly full: ${formatGib(freeBytes)} GiB free, at least ${formatGib(options.minDiskFreeBytes)} GiB needed`);
  }
  return problems;
}

const formatGib = (bytes: number) => (bytes / 1024 ** 3).toFixed(1);

/** Answers null when the engine answers `GET /_ping` with 200, else the problem in a sentence. */
export function pingDocker(socketPath: string, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', method: 'GET', timeout: timeoutMs }, (response) => {
      response.resume();
      resolve(response.statusCode === 200 ? null : `docker engine answered HTTP ${response.statusCode} at ${socketPath}`.slice(0, 200));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (error: NodeJS.ErrnoException) => {
      resolve(`docker engine unreachable at ${socketPath}: ${error.code ?? error.message}`.slice(0, 200));
    });
    req.end();
  });
}
