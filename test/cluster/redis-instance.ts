// A private Redis for the cluster test, on a unix socket in its own temp dir. The replicas keep their rate-limit counters
// there (runtime.ts): on the machine's shared Redis those counters were shared with every other cluster run on the
// machine, and outlived a run by up to a minute, so a run's sign-ins could be answered 429 for another run's (every
// client here is 127.0.0.1 behind HAProxy). A socket rather than a TCP port: no port to pick, so none to lose.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SpawnedProcess, spawnProcess, waitFor } from '../harness/processes.js';

export interface RedisInstance {
  /** The socket's path: REDIS_URL for the replicas (ioredis reads a leading "/" as a unix socket). */
  url: string;
  process: SpawnedProcess;
  /** The server's output (its log goes to stdout). */
  output(): string;
  stop(): Promise<void>;
}

/** Answers whether the server at `path` answers PING with PONG. */
function ping(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}

export async function startRedisInstance(): Promise<RedisInstance> {
  const dir = mkdtempSync(join(tmpdir(), 'ark-cluster-redis-'));
  const socket = join(dir, 'redis.sock');
  // --port 0: no TCP listener at all. Nothing persisted: the counters live as long as the cluster.
  const child = spawnProcess(
    'redis-server',
    ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--save', '', '--appendonly', 'no', '--dir', dir],
    { exitSignal: 'SIGKILL', outputLimitBytes: 64 * 1024 },
  );
  const stop = async () => {
    await child.stop('SIGTERM', { timeoutMs: 5_000 });
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (!child.isRunning()) throw new Error('redis-server exited');
        return ping(socket);
      },
      { timeoutMs: 30_000, intervalMs: 50, description: 'the private Redis to answer PING' },
    );
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n--- redis-server output ---\n${child.output().slice(-4000)}`);
  }
  return { url: socket, process: child, output: () => child.output(), stop };
}
