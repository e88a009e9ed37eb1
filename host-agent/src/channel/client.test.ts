import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CommandMessage, ManualClock, nodeEd25519Signer } from '@ark/shared';
import { generateKeyPairSync } from 'node:crypto';
import nacl from 'tweetnacl';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChannelClient, type ChannelClientOptions } from './client.js';
import { QUEUE_FILE } from './queue.js';
import { FakeControlPlane } from './testing/fake-control-plane.js';

const quietLogger = { info() {}, warn() {}, error() {}, debug() {} };
// Nothing listens on the discard port of loopback: connections are refused at once.
const unreachable = 'ws://127.0.0.1:9/api/v1/agents/channel?v=1';

const telemetry = (n: number) => ({
  t: 'telemetry' as const,
  samples: [{ at: '2026-01-01T00:00:00.000Z', host: { load1: n }, devices: [] }],
});

const heartbeat = () => ({
  t: 'heartbeat' as const,
  at: new Date().toISOString(),
  uptime_s: 5,
  healthy: true,
  problems: [],
  running_jobs: [],
});

describe('ChannelClient', () => {
  let cp: FakeControlPlane;
  let stateDir: string;
  let machineId: string;
  let keys: nacl.SignKeyPair;
  let clients: ChannelClient[];
  let commands: CommandMessage[];

  beforeEach(async () => {
    cp = await FakeControlPlane.start();
    stateDir = mkdtempSync(join(tmpdir(), 'ark-channel-'));
    machineId = randomUUID();
    keys = nacl.sign.keyPair();
    cp.allow(machineId, Buffer.from(keys.publicKey).toString('base64'));
    clients = [];
    commands = [];
  });

  afterEach(async () => {
    for (const client of clients) await client.stop();
    await cp.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  function client(overrides: Partial<ChannelClientOptions> = {}): ChannelClient {
    const made = new ChannelClient({
      url: cp.url,
      machineId,
      secretKey: keys.secretKey,
      controlPlanePublicKey: cp.publicKeyBase64,
      stateDir,
      agentVersion: '1.2.3',
      onCommand: async (command) => {
        commands.push(command);
      },
      logger: quietLogger,
      backoff: { initialMs: 20, maxMs: 100 },
      watchdogIntervalMs: 50,
      ...overrides,
    });
    clients.push(made);
    return made;
  }

  it('answers the challenge with a tweetnacl-signed hello and acknowledges heartbeats', async () => {
    let connectedCalls = 0;
    const agent = client({ onConnected: () => connectedCalls++ });
    await agent.start();
    await agent.connected();
    const hello = cp.received[0];
    expect(hello).toMatchObject({ t: 'hello', machine_id: machineId, seq: 1, agent_version: '1.2.3', commands_applied_upto: 0 });
    expect(hello?.sid).toBe(cp.current?.sid);
    expect(connectedCalls).toBe(1);
    expect(agent.status()).toMatchObject({ state: 'ready', connected: true, sessionId: cp.current?.sid, queued: 0 });

    expect(agent.sendHeartbeat(heartbeat())).toBe(true);
    await cp.until(() => agent.status().lastHeartbeatAckAt !== null);
    expect(cp.received.at(-1)).toMatchObject({ t: 'heartbeat', seq: 2 });
  });

  it('persists a reliable message before sending it, and drops it once acknowledged', async () => {
    cp.autoAck = false;
    const agent = client();
    await agent.start();
    await agent.connected();
    const id = await agent.enqueue(telemetry(1));
    expect(id).toBe(1);
    // On disk by the time enqueue resolves.
    expect(readFileSync(join(stateDir, QUEUE_FILE), 'utf8')).toContain('"id":1');
    await cp.until(() => cp.received.some((m) => m.t === 'telemetry'));
    expect(cp.received.find((m) => m.t === 'telemetry')).toMatchObject({ id: 1, samples: telemetry(1).samples });
    expect(agent.status().queued).toBe(1);
    cp.current?.ack(1);
    await cp.until(() => agent.status().queued === 0);
    expect(agent.status().ackedUpto).toBe(1);
  });

  it('resends what was not acknowledged after a reconnect, and ids continue after a restart', async () => {
    cp.autoAck = false;
    const first = client();
    await first.start();
    await first.connected();
    await first.enqueue(telemetry(1));
    await first.enqueue(telemetry(2));
    await cp.until(() => cp.received.filter((m) => m.t === 'telemetry').length === 2);
    cp.current?.ack(1);
    await cp.until(() => first.status().queued === 1);
    // The connection drops before message 2 is acknowledged.
    cp.current?.ws.terminate();
    await cp.until(() => cp.connections.length === 2 && cp.connections[1]?.welcomed === true);
    await cp.until(() => cp.received.filter((m) => m.t === 'telemetry' && m.connection === 1).length === 1);
    expect(cp.received.filter((m) => m.connection === 1 && m.t === 'telemetry').map((m) => (m as { id: number }).id)).toEqual([2]);
    expect(first.status().reconnects).toBe(1);
    await first.stop();

    // A restart reads the queue from disk: message 2 is still unacknowledged, and the next id is 3.
    const second = client();
    await second.start();
    await second.connected();
    await cp.until(() => cp.received.filter((m) => m.t === 'telemetry' && m.connection === 2).length === 1);
    expect(await second.enqueue(telemetry(3))).toBe(3);
    await cp.until(() => cp.received.filter((m) => m.t === 'telemetry' && m.connection === 2).length === 2);
    expect(cp.received.filter((m) => m.connection === 2 && m.t === 'telemetry').map((m) => (m as { id: number }).id)).toEqual([2, 3]);
  });

  it('drops what the welcome says was applied and resends the rest', async () => {
    cp.autoAck = false;
    const offline = client({ url: unreachable });
    await offline.start();
    for (let n = 1; n <= 3; n++) await offline.enqueue(telemetry(n));
    expect(offline.sendHeartbeat(heartbeat())).toBe(false);
    await offline.stop();
    cp.ackedUpto = 2;
    const agent = client();
    await agent.start();
    await cp.until(() => cp.received.some((m) => m.t === 'telemetry'));
    expect(cp.received.filter((m) => m.t === 'telemetry').map((m) => (m as { id: number }).id)).toEqual([3]);
    expect(agent.status().queued).toBe(1);
  });

  it('renumbers its queue when the control plane has applied ids it never issued (a restored state dir)', async () => {
    cp.autoAck = false;
    cp.ackedUpto = 40;
    const offline = client({ url: unreachable });
    await offline.start();
    await offline.enqueue(telemetry(1));
    await offline.stop();
    const agent = client();
    await agent.start();
    await cp.until(() => cp.received.some((m) => m.t === 'telemetry'));
    expect(cp.received.find((m) => m.t === 'telemetry')).toMatchObject({ id: 41 });
    expect(await agent.enqueue(telemetry(2))).toBe(42);
  });

  it('keeps at most sendWindow messages in flight', async () => {
    cp.autoAck = false;
    const agent = client({ sendWindow: 2 });
    await agent.start();
    await agent.connected();
    for (let n = 1; n <= 5; n++) await agent.enqueue(telemetry(n));
    await cp.until(() => cp.received.filter((m) => m.t === 'telemetry').length === 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(cp.received.filter((m) => m.t === 'telemetry')).toHaveLength(2);
    cp.current?.ack(2);
    await cp.until(() => cp.received.filter((m) => m.t === 'telemetry').length === 4);
    cp.current?.ack(4);
    await cp.until(() => cp.received.filter((m) => m.t === 'telemetry').length === 5);
    expect(cp.received.filter((m) => m.t === 'telemetry').map((m) => (m as { id: number }).id)).toEqual([1, 2, 3, 4, 5]);
  });

  it('applies each command once, in order, and dedupes a resend after a reconnect', async () => {
    const agent = client();
    await agent.start();
    await agent.connected();
    cp.current?.command(1, { go_live: true });
    cp.current?.command(2, { go_live: false });
    await cp.until(() => cp.received.some((m) => m.t === 'command_ack' && m.upto === 2));
    expect(commands.map((c) => c.command_seq)).toEqual([1, 2]);
    expect(agent.status().commandsAppliedUpto).toBe(2);

    // A control plane that lost the acknowledgement resends command 2 after the reconnect.
    cp.current?.ws.terminate();
    await cp.until(() => cp.connections[1]?.welcomed === true);
    expect(cp.received.filter((m) => m.t === 'hello').at(-1)).toMatchObject({ commands_applied_upto: 2 });
    cp.current?.command(2, { go_live: false });
    cp.current?.command(3, { go_live: true });
    await cp.until(() => cp.received.some((m) => m.t === 'command_ack' && m.upto === 3 && m.connection === 1));
    expect(cp.received.filter((m) => m.t === 'command_ack' && m.connection === 1).map((m) => (m as { upto: number }).upto)).toEqual([2, 3]);
    expect(commands.map((c) => c.command_seq)).toEqual([1, 2, 3]);
    expect(agent.status().duplicateCommands).toBe(1);

    // The counter survives a restart.
    await agent.stop();
    const restarted = client();
    await restarted.start();
    await restarted.connected();
    expect(cp.received.filter((m) => m.t === 'hello').at(-1)).toMatchObject({ commands_applied_upto: 3 });
  });

  it('acknowledges a command whose handler throws, so one bad command does not block the next', async () => {
    const agent = client({
      onCommand: async (command) => {
        commands.push(command);
        if (command.command_seq === 1) throw new Error('cannot apply');
      },
    });
    await agent.start();
    await agent.connected();
    cp.current?.command(1);
    cp.current?.command(2);
    await cp.until(() => cp.received.some((m) => m.t === 'command_ack' && m.upto === 2));
    expect(commands.map((c) => c.command_seq)).toEqual([1, 2]);
  });

  it('refuses a control-plane frame signed by another key: nothing in it is applied, and it reconnects', async () => {
    const agent = client();
    await agent.start();
    await agent.connected();
    cp.signOverride = nodeEd25519Signer(generateKeyPairSync('ed25519').privateKey);
    cp.current?.command(1);
    await cp.until(() => cp.connections[0]?.closed !== null);
    expect(cp.connections[0]?.closed).toEqual({ code: 1008, reason: 'bad_signature' });
    expect(commands).toEqual([]);
    cp.signOverride = null;
    await cp.until(() => agent.status().connected && cp.connections.length === 2);
    expect(agent.status().reconnects).toBe(1);
  });

  it('refuses a control-plane frame with a repeated sequence number', async () => {
    const agent = client();
    await agent.start();
    await agent.connected();
    const connection = cp.current;
    if (!connection) throw new Error('no connection');
    connection.seq -= 1;
    connection.command(1);
    await cp.until(() => connection.closed !== null);
    expect(connection.closed).toEqual({ code: 1008, reason: 'replayed_seq' });
    expect(commands).toEqual([]);
  });

  it('backs off exponentially with jitter, up to the bound, while the control plane is unreachable', async () => {
    const waits: number[] = [];
    const agent = client({ url: unreachable, backoff: { initialMs: 20, maxMs: 160 }, random: () => 1 });
    agent.on('disconnected', (event: { retryInMs: number }) => waits.push(event.retryInMs));
    await agent.start();
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (waits.length >= 6) {
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    await agent.stop();
    // With jitter pinned at its top, each wait is its whole ceiling: doubling, then bounded.
    expect(waits.slice(0, 6)).toEqual([20, 40, 80, 160, 160, 160]);
    expect(agent.status().reconnects).toBeGreaterThanOrEqual(5);
  });

  it('jitters each delay between half and all of its ceiling', async () => {
    const waits: number[] = [];
    const agent = client({ url: unreachable, backoff: { initialMs: 1_000, maxMs: 1_000 }, random: () => 0 });
    agent.on('disconnected', (event: { retryInMs: number }) => waits.push(event.retryInMs));
    await agent.start();
    await new Promise<void>((resolve) => agent.once('disconnected', () => resolve()));
    await agent.stop();
    // With jitter at its bottom, half the ceiling.
    expect(waits[0]).toBe(500);
  });

  it('waits out its reconnect backoff on the injected clock, not on real time', async () => {
    const clock = new ManualClock('2030-01-01T00:00:00.000Z');
    const agent = client({ url: unreachable, backoff: { initialMs: 1_000, maxMs: 1_000 }, random: () => 1, clock });
    const failed = () => new Promise<void>((resolve) => agent.once('disconnected', () => resolve()));
    const first = failed();
    await agent.start();
    await first;
    expect(agent.status()).toMatchObject({ state: 'backoff', reconnects: 0, nextAttemptAt: '2030-01-01T00:00:01.000Z' });
    // Real time passes, the clock stands still: no second attempt.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(agent.status().reconnects).toBe(0);
    const second = failed();
    await clock.advance(1_000);
    await second;
    expect(agent.status()).toMatchObject({ reconnects: 1, nextAttemptAt: '2030-01-01T00:00:02.000Z' });
  });

  it('reconnects when a heartbeat goes unanswered', async () => {
    cp.ackHeartbeats = false;
    const agent = client({ watchdogIntervalMs: 20, heartbeatAckTimeoutMs: 150 });
    await agent.start();
    await agent.connected();
    agent.sendHeartbeat(heartbeat());
    await cp.until(() => cp.connections.length === 2);
    expect(agent.status().reconnects).toBeGreaterThanOrEqual(1);
    expect(cp.connections[0]?.closed).not.toBeNull();
  });
});
