// The topology of deploy/cluster/compose.yaml on this machine: three `ark-cp serve` replicas on a private PostgreSQL
// (postgres-instance.ts) and the machine's Redis, HAProxy in front rendered from the same deploy/cluster/haproxy.cfg
// (its ${VAR}s filled from the environment), and a cuttable TCP hop in front of HAProxy for agents, so a fault can
// cut every agent connection at once. Replicas are killed, paused and restarted by their own PIDs. Its Redis is a private
// one (redis-instance.ts). Every port is a stablePort (harness/processes.ts): a replica comes back on its own port after
// a kill, and PostgreSQL after a restart, so no outgoing connection may take one meanwhile.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlane, repoRoot, startControlPlane } from '../e2e/host-side-helpers.js';
import { type SpawnedProcess, spawnProcess, stablePort, waitFor } from '../harness/processes.js';
import { type PostgresInstance, startPostgresInstance } from './postgres-instance.js';
import { type RedisInstance, startRedisInstance } from './redis-instance.js';

export const HAPROXY_CFG = join(repoRoot, 'deploy', 'cluster', 'haproxy.cfg');
export const REPLICAS = 3;
/** Where HAProxy's connections to the replicas come from (Linux answers all of 127.0.0.0/8 on loopback). */
export const LB_SOURCE = '127.0.0.2';

export interface Replica {
  index: number;
  port: number;
  base: string;
  dataDir: string;
  cp: ControlPlane | null;
  paused: boolean;
}

/** A TCP hop whose every open connection can be cut at once (agents' channels to the load balancer). */
class CuttableHop {
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  cuts = 0;

  async start(port: number, targetPort: number): Promise<void> {
    this.#server = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      for (const [a, b] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.#sockets.add(a);
        a.on('error', () => b.destroy());
        a.on('close', () => {
          this.#sockets.delete(a);
          b.destroy();
        });
        a.pipe(b);
      }
    });
    // A failed bind rejects (rather than an unhandled 'error' event while start() waits forever).
    await new Promise<void>((resolve, reject) => {
      this.#server?.once('error', reject);
      this.#server?.listen(port, '127.0.0.1', () => {
        this.#server?.off('error', reject);
        resolve();
      });
    });
  }

  /** Resets every connection through the hop; answers how many were open. */
  cut(): number {
    const open = this.#sockets.size;
    for (const socket of this.#sockets) socket.resetAndDestroy();
    this.cuts++;
    return open / 2;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()));
  }
}

export class Cluster {
  readonly replicas: Replica[] = [];
  postgres!: PostgresInstance;
  redis: RedisInstance | undefined;
  haproxy: SpawnedProcess | undefined;
  /** The load balancer: every client request goes here. */
  lbBase = '';
  /** The agents' way to the load balancer (the cuttable hop). */
  agentBase = '';
  env: NodeJS.ProcessEnv = {};
  readonly #hop = new CuttableHop();
  readonly #dir = mkdtempSync(join(tmpdir(), 'ark-cluster-'));

  /** Starts PostgreSQL, the replicas (the first alone: it applies the migrations) and HAProxy. */
  static async start(env: NodeJS.ProcessEnv): Promise<Cluster> {
    const cluster = new Cluster();
    try {
      await cluster.#start(env);
    } catch (error) {
      // Read before stop() removes the logs: the error alone must say which part failed and why.
      const logs = cluster.logs();
      await cluster.stop();
      if (error instanceof Error) error.message += `\n--- the cluster at its failed start ---\n${logs}`;
      throw error;
    }
    return cluster;
  }

  async #start(env: NodeJS.ProcessEnv): Promise<void> {
    this.redis = await startRedisInstance();
    this.postgres = await startPostgresInstance();
    const lbPort = await stablePort();
    const hopPort = await stablePort();
    this.lbBase = `http://127.0.0.1:${lbPort}`;
    this.agentBase = `http://127.0.0.1:${hopPort}`;
    this.env = {
      ...env,
      DATABASE_URL: this.postgres.url,
      REDIS_URL: this.redis.url,
      // Every client here is 127.0.0.1 (and HAProxy is not a trusted proxy), so all sign-ins and step-ups share one
      // address's budget, 10 a minute by default: one run alone makes 8 to 10 in a minute (withdrawals sign in and
      // step up each time), a slow minute more. The limiter is not what this test is about.
      ARK_AUTH_ATTEMPTS_PER_MIN: '1000',
      // Agents learn their channel URL from here: through the cuttable hop to the load balancer.
      ARK_PUBLIC_URL: this.agentBase,
      LOG_LEVEL: 'warn',
      // HAProxy connects from 127.0.0.2 with a PROXY header (haproxy.cfg); the test's own requests to a replica come
      // from 127.0.0.1 without one, and are never read as one.
      ARK_PROXY_PROTOCOL_FROM: LB_SOURCE,
    };
    for (let index = 0; index < REPLICAS; index++) {
      const port = await stablePort();
      this.replicas.push({
        index,
        port,
        base: `http://127.0.0.1:${port}`,
        dataDir: mkdtempSync(join(this.#dir, `cp${index + 1}-`)),
        cp: null,
        paused: false,
      });
    }
    const [first, ...rest] = this.replicas as [Replica, ...Replica[]];
    await this.startReplica(first);
    await Promise.all(rest.map((replica) => this.startReplica(replica)));
    this.haproxy = spawnProcess('haproxy', ['-db', '-f', HAPROXY_CFG], {
      env: {
        ARK_LB_BIND: `127.0.0.1:${lbPort}`,
        ARK_LB_SOURCE: LB_SOURCE,
        ...Object.fromEntries(this.replicas.map((r) => [`ARK_CP${r.index + 1}`, `127.0.0.1:${r.port}`])),
      },
      logFile: join(this.#dir, 'haproxy.log'),
    });
    await this.#hop.start(hopPort, lbPort);
    // An exit ends the wait at once; its output is in the error (Cluster.start adds every part's logs).
    const haproxy = this.haproxy;
    const ready = await waitFor(async () => (haproxy.isRunning() ? (await fetch(`${this.lbBase}/readyz`)).ok : 'exited'), {
      timeoutMs: 30_000,
      description: 'HAProxy to answer /readyz',
    });
    if (ready !== true) throw new Error(`haproxy exited (${JSON.stringify(await haproxy.exited)})`);
  }

  /** The cluster as a ControlPlane for the e2e helpers: its base is the load balancer, its env the CLI's. */
  asControlPlane(): ControlPlane {
    const first = this.replicas[0]?.cp;
    if (!first) throw new Error('replica 1 is not running');
    return { ...first, base: this.lbBase, env: { ...this.env, PORT: undefined, ARK_DATA_DIR: first.dataDir } };
  }

  async startReplica(replica: Replica): Promise<void> {
    replica.cp = await startControlPlane({
      port: replica.port,
      dataDir: replica.dataDir,
      databaseUrl: this.postgres.url,
      env: { ...this.env, ARK_REPLICA_URL: replica.base },
    });
    replica.paused = false;
  }

  /** kill -9, then a restart on the same port and data dir once `downMs` passed. */
  async killReplica(replica: Replica, downMs = 0): Promise<void> {
    await replica.cp?.process.stop('SIGKILL');
    if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.startReplica(replica);
  }

  /** SIGSTOP for `ms`, then SIGCONT. */
  async pauseReplica(replica: Replica, ms: number): Promise<void> {
    const pid = replica.cp?.process.pid;
    if (pid === undefined) return;
    process.kill(pid, 'SIGSTOP');
    replica.paused = true;
    try {
      await new Promise((resolve) => setTimeout(resolve, ms));
    } finally {
      process.kill(pid, 'SIGCONT');
      replica.paused = false;
    }
  }

  /** Cuts every agent connection; answers how many there were. */
  cutAgentConnections(): number {
    return this.#hop.cut();
  }

  /** Replicas whose process died without the test killing it (e.g. of a database restart). */
  unexpectedExits(): string[] {
    return this.replicas
      .filter((r) => r.cp !== null && !r.cp.process.isRunning())
      .map((r) => `replica ${r.index + 1} exited:\n${r.cp?.process.output().slice(-4000)}`);
  }

  /** Waits until every replica answers /readyz directly and HAProxy through the load balancer. */
  async settle(timeoutMs = 60_000): Promise<void> {
    await waitFor(
      async () => {
        for (const replica of this.replicas) if (!(await fetch(`${replica.base}/readyz`)).ok) return false;
        return (await fetch(`${this.lbBase}/readyz`)).ok;
      },
      { timeoutMs, description: 'every replica ready' },
    );
  }

  /** The tail of every part's output: replicas, HAProxy, PostgreSQL's server log, Redis. */
  logs(): string {
    const replicas = this.replicas.map((r) => {
      const state = r.cp === null ? 'not up' : r.cp.process.isRunning() ? `pid ${r.cp.process.pid}` : 'exited';
      return `--- replica ${r.index + 1} (port ${r.port}, ${state}) ---\n${r.cp?.process.output().slice(-3000) ?? ''}`;
    });
    const haproxy = this.haproxy?.output() ?? 'not started';
    return [
      ...replicas,
      `--- haproxy (${this.lbBase || 'no port yet'}) ---\n${haproxy.slice(-3000)}`,
      `--- postgresql ---\n${this.postgres?.logTail() ?? 'not started'}`,
      `--- redis ---\n${this.redis?.output().slice(-1500) ?? 'not started'}`,
    ].join('\n');
  }

  async stop(): Promise<void> {
    await this.#hop.stop().catch(() => undefined);
    await this.haproxy?.stop('SIGTERM').catch(() => undefined);
    await Promise.all(
      this.replicas.map(async (replica) => {
        if (replica.paused && replica.cp) process.kill(replica.cp.process.pid, 'SIGCONT');
        await replica.cp?.process.stop('SIGTERM', { timeoutMs: 5_000 }).catch(() => undefined);
      }),
    );
    await this.postgres?.stop().catch(() => undefined);
    await this.redis?.stop().catch(() => undefined);
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
