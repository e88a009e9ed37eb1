// The agent channel end to end: the real control-plane app (its gateway, store and handler registry) listening on
// 127.0.0.1, and the real agent ChannelClient, connected through a loopback TCP proxy the test can cut, so a
// connection can die at exactly the moment a test needs.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outboxWriter } from '@ark/control-plane/store/outbox';
import { counterValue, type GatewayTestApp, openReplicaStore, startGatewayApp } from '@ark/control-plane/gateway/testing/gateway-app';
import { TestDirectory } from '@ark/control-plane/gateway/testing/raw-agent';
import { DIALECTS } from '@ark/control-plane/testing/stores';
import { ChannelClient } from '@ark/host-agent/channel/index';
import type { CommandMessage } from '@ark/shared';
import nacl from 'tweetnacl';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const quietLogger = { info() {}, warn() {}, error() {}, debug() {} };
const telemetry = (n: number) => ({
  t: 'telemetry' as const,
  samples: [{ at: new Date().toISOString(), host: { load1: n }, devices: [] }],
});

/** A loopback TCP proxy in front of a control plane; `cut()` kills every connection through it at once. */
class CuttableProxy {
  readonly #sockets = new Set<Socket>();
  readonly server: Server;
  targetPort = 0;
  connections = 0;

  private constructor(server: Server) {
    this.server = server;
  }

  static async start(targetPort: number): Promise<CuttableProxy> {
    const proxy = new CuttableProxy(createServer((client) => proxy.#pipe(client)));
    proxy.targetPort = targetPort;
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', () => resolve()));
    return proxy;
  }

  get url(): string {
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy not listening');
    return `ws://127.0.0.1:${address.port}/api/v1/agents/channel?v=1`;
  }

  cut(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #pipe(client: Socket): void {
    this.connections += 1;
    const upstream = tcpConnect(this.targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}

const portOf = (baseUrl: string) => Number(new URL(baseUrl).port);

async function waitUntil(probe: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(DIALECTS)('agent channel end to end on %s', (dialect) => {
  let a: GatewayTestApp;
  let replicas: GatewayTestApp[];
  let proxy: CuttableProxy;
  let directory: TestDirectory;
  let stateDir: string;
  let machineId: string;
  let keys: nacl.SignKeyPair;
  let clients: ChannelClient[];
  let commands: CommandMessage[];

  beforeEach(async () => {
    directory = new TestDirectory();
    a = await startGatewayApp(dialect, { directory, settings: { pollIntervalMs: 60_000 } });
    replicas = [];
    proxy = await CuttableProxy.start(portOf(a.baseUrl));
    stateDir = mkdtempSync(join(tmpdir(), 'ark-agent-channel-'));
    machineId = randomUUID();
    keys = nacl.sign.keyPair();
    directory.keys.set(machineId, Buffer.from(keys.publicKey).toString('base64'));
    clients = [];
    commands = [];
  });

  afterEach(async () => {
    for (const client of clients) await client.stop();
    await proxy.close();
    for (const replica of replicas) await replica.close();
    await a.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  /** A second control-plane replica over the same database, sharing the secret key (so the same channel key). */
  async function replica(): Promise<GatewayTestApp> {
    const store = openReplicaStore(a.store);
    // On SQLite the poll is what carries a command across replicas (see below): keep it short there.
    const pollIntervalMs = dialect === 'postgres' ? 60_000 : 200;
    const b = await startGatewayApp(dialect, { store, secretKey: a.config.secretKey, directory, settings: { pollIntervalMs } });
    replicas.push({
      ...b,
      async close() {
        await b.close();
        await store.destroy();
      },
    });
    return b;
  }

  function agent(overrides: Partial<ConstructorParameters<typeof ChannelClient>[0]> = {}): ChannelClient {
    const client = new ChannelClient({
      url: proxy.url,
      machineId,
      secretKey: keys.secretKey,
      controlPlanePublicKey: a.controlPlanePublicKey,
      stateDir,
      agentVersion: 'e2e',
      onCommand: async (command) => {
        commands.push(command);
      },
      logger: quietLogger,
      backoff: { initialMs: 50, maxMs: 200 },
      watchdogIntervalMs: 100,
      ...overrides,
    });
    clients.push(client);
    return client;
  }

  it('connects, is acknowledged, and has its telemetry applied', async () => {
    const applied: number[] = [];
    a.channel.on('telemetry', async (_trx, id, msg) => {
      if (id === machineId) applied.push(msg.id);
    });
    const client = agent();
    await client.start();
    await client.connected();
    expect(a.gateway.isConnected(machineId)).toBe(true);
    client.sendHeartbeat({ t: 'heartbeat', at: new Date().toISOString(), uptime_s: 1, healthy: true, problems: [], running_jobs: [] });
    await client.enqueue(telemetry(1));
    await client.enqueue(telemetry(2));
    await waitUntil(() => client.status().queued === 0 && client.status().lastHeartbeatAckAt !== null);
    expect(applied).toEqual([1, 2]);
    // The agent asked for MAC keys and the gateway agreed them: heartbeats, telemetry and acks travel under the MAC.
    expect(client.status()).toMatchObject({ connected: true, ackedUpto: 2, nextMessageId: 3, frameAuth: 'mac' });
    expect(await counterValue(a.metrics, 'ark_channel_handshakes_total', { auth: 'mac' })).toBe(1);
  });

  it('speaks signatures only with an agent that does not ask for MAC keys (agents before them)', async () => {
    const applied: number[] = [];
    a.channel.on('telemetry', async (_trx, id, msg) => {
      if (id === machineId) applied.push(msg.id);
    });
    const client = agent({ agentVersion: 'e2e-signatures', sessionMac: false });
    await client.start();
    await client.connected();
    client.sendHeartbeat({ t: 'heartbeat', at: new Date().toISOString(), uptime_s: 1, healthy: true, problems: [], running_jobs: [] });
    await client.enqueue(telemetry(1));
    await waitUntil(() => client.status().queued === 0 && client.status().lastHeartbeatAckAt !== null);
    expect(applied).toEqual([1]);
    expect(client.status().frameAuth).toBe('signature');
    expect(await counterValue(a.metrics, 'ark_channel_handshakes_total', { auth: 'signature' })).toBe(1);
  });

  it('applies a reliable message once when the connection dies between its commit and its acknowledgement', async () => {
    let calls = 0;
    a.channel.on('telemetry', async (_trx, id) => {
      if (id !== machineId) return;
      calls += 1;
      // The effect commits after this returns, but the acknowledgement has no socket to travel on.
      if (calls === 1) proxy.cut();
    });
    const client = agent();
    let welcomes = 0;
    client.on('connected', () => {
      welcomes += 1;
    });
    await client.start();
    await client.connected();
    await client.enqueue(telemetry(1));
    await waitUntil(() => welcomes === 2 && client.status().queued === 0);
    // The second welcome said it was applied, so the agent retired it instead of resending it.
    expect(client.status().ackedUpto).toBe(1);
    expect(calls).toBe(1);
    await client.enqueue(telemetry(2));
    await waitUntil(() => client.status().ackedUpto === 2);
    expect(calls).toBe(2);
  });

  // Two replicas over one SQLite file in one process cannot wait on each other's lock (better-sqlite3 waits
  // synchronously, freezing the process that would release it); SQLite deployments are one process anyway, and the
  // gateway's own tests cover a resend on one replica.
  it.runIf(dialect === 'postgres')(
    'applies a reliable message once when it is resent to another replica while the first still applies it',
    async () => {
      const b = await replica();
      let gate: () => void = () => {};
      const released = new Promise<void>((resolve) => {
        gate = resolve;
      });
      let calls = 0;
      const spy = async (_trx: unknown, id: string) => {
        if (id !== machineId) return;
        calls += 1;
        if (calls === 1) {
          // Inside the applying transaction, before it commits: the socket dies, so no ack can reach the agent,
          // and the agent reconnects to the other replica while this transaction is still open.
          proxy.targetPort = portOf(b.baseUrl);
          proxy.cut();
          await released;
        }
      };
      a.channel.on('telemetry', spy);
      b.channel.on('telemetry', spy);
      const client = agent();
      let welcomes = 0;
      client.on('connected', () => {
        welcomes += 1;
        // The resend goes out right after the welcome; let it reach replica B, then let A commit.
        if (welcomes === 2) setTimeout(gate, 300);
      });
      await client.start();
      await client.connected();
      await client.enqueue(telemetry(1));
      await waitUntil(() => welcomes === 2 && client.status().queued === 0);
      // Replica B received the resend (its welcome could not know about A's open transaction) and did not apply it.
      expect(await counterValue(b.metrics, 'ark_channel_frames_total', { type: 'telemetry' })).toBe(1);
      expect(calls).toBe(1);
      const row = await a.store.db
        .selectFrom('agent_channel_state')
        .select('last_applied_msg_id')
        .where('machine_id', '=', machineId)
        .executeTakeFirstOrThrow();
      expect(row.last_applied_msg_id).toBe(1n);
      // Later messages still flow.
      await client.enqueue(telemetry(2));
      await waitUntil(() => client.status().ackedUpto === 2);
      expect(calls).toBe(2);
    },
  );

  it('delivers commands queued while the agent is offline after it connects, each once, in order', async () => {
    const now = new Date();
    const queued = [];
    for (let i = 0; i < 5; i++) {
      queued.push(await outboxWriter().enqueue(a.store.db, { machineId, kind: 'update_go_live', body: { go_live: i % 2 === 0 }, now }));
    }
    const client = agent();
    await client.start();
    await waitUntil(() => client.status().commandsAppliedUpto === 5);
    expect(commands.map((c) => [c.command_seq, c.command_id, c.kind])).toEqual(
      queued.map((q) => [q.commandSeq, q.commandId, 'update_go_live']),
    );
    await waitUntil(async () => {
      const pending = await a.store.db.selectFrom('agent_outbox').select('command_seq').where('acked_at', 'is', null).execute();
      return pending.length === 0;
    });

    // Reconnects and restarts never deliver them again.
    proxy.cut();
    await waitUntil(() => client.status().reconnects >= 1 && client.status().connected);
    await client.stop();
    const restarted = agent();
    await restarted.start();
    await restarted.connected();
    const sixth = await outboxWriter().enqueue(a.store.db, {
      machineId,
      kind: 'update_go_live',
      body: { go_live: true },
      now,
    });
    await waitUntil(() => restarted.status().commandsAppliedUpto === 6);
    expect(commands.map((c) => c.command_seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(commands.at(-1)?.command_id).toBe(sixth.commandId);
    expect(restarted.status().duplicateCommands).toBe(0);
  });

  it('delivers a command queued on one replica to the agent connected to another', async () => {
    const b = await replica();
    proxy.targetPort = portOf(b.baseUrl);
    const client = agent();
    await client.start();
    await client.connected();
    expect(b.gateway.isConnected(machineId)).toBe(true);
    expect(a.gateway.isConnected(machineId)).toBe(false);
    const started = Date.now();
    // Queued through replica A's store, inside a transaction as a route would.
    const queued = await a.store.db.transaction().execute((trx) =>
      outboxWriter().enqueue(trx, {
        machineId,
        kind: 'run_nettest',
        body: { endpoint: 'http://127.0.0.1:1', timeout_ms: 5_000, download_bytes: 1, upload_bytes: 1 },
        now: new Date(),
      }),
    );
    await waitUntil(() => commands.length === 1);
    const elapsedMs = Date.now() - started;
    expect(commands[0]).toMatchObject({ command_seq: 1, command_id: queued.commandId, kind: 'run_nettest' });
    // Postgres: LISTEN/NOTIFY, not the minute-long poll. SQLite: the 200 ms poll (replicas over one SQLite file
    // are a test setup; a SQLite deployment is one process, where the in-process wake-up delivers at once).
    expect(elapsedMs).toBeLessThan(5_000);
  });
});

describe('agent channel across replicas on sqlite (one process, polling fallback)', () => {
  it('still delivers when only the poll can see the command', async () => {
    const directory = new TestDirectory();
    const a = await startGatewayApp('sqlite', { directory, settings: { pollIntervalMs: 100 } });
    const replicaStore = openReplicaStore(a.store);
    const b = await startGatewayApp('sqlite', {
      store: replicaStore,
      secretKey: a.config.secretKey,
      directory,
      settings: { pollIntervalMs: 100 },
    });
    const stateDir = mkdtempSync(join(tmpdir(), 'ark-agent-channel-'));
    const keys = nacl.sign.keyPair();
    const machineId = randomUUID();
    directory.keys.set(machineId, Buffer.from(keys.publicKey).toString('base64'));
    const received: number[] = [];
    const client = new ChannelClient({
      url: `${b.baseUrl.replace('http', 'ws')}/api/v1/agents/channel?v=1`,
      machineId,
      secretKey: keys.secretKey,
      controlPlanePublicKey: a.controlPlanePublicKey,
      stateDir,
      agentVersion: 'e2e',
      onCommand: async (command) => {
        received.push(command.command_seq);
      },
      logger: quietLogger,
    });
    try {
      await client.start();
      await client.connected();
      // Written through A's own connection: B's in-process wake-up fires too early to see it, or not at all.
      await outboxWriter().enqueue(a.store.db, {
        machineId,
        kind: 'update_go_live',
        body: { go_live: false },
        now: new Date(),
      });
      await waitUntil(() => received.length === 1);
      expect(received).toEqual([1]);
    } finally {
      await client.stop();
      await b.close();
      await replicaStore.destroy();
      await a.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
