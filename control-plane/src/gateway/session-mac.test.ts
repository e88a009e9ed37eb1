import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS } from '../testing/stores.js';
import { CLOSE_CODES } from './session.js';
import { counterValue, type GatewayTestApp, startGatewayApp } from './testing/gateway-app.js';
import { RawAgent, type TestMachine, testMachine } from './testing/raw-agent.js';

// The per-connection MAC keys (shared/src/channel/session-mac.ts) over the real gateway: agreed in the signed
// handshake when the agent asks (mac=1), used for the types the catalog lets, and every way a MAC frame can be
// wrong refused: tampered, replayed on the connection, replayed on another connection, on a type that must stay
// signed, on a connection that agreed no key. Agents that do not ask keep signatures only.

const MAC = '?v=1&mac=1';

function heartbeatPayload(agent: RawAgent, seq: number): Record<string, unknown> {
  return {
    v: 1,
    t: 'heartbeat',
    sid: agent.sid,
    seq,
    at: new Date().toISOString(),
    uptime_s: 1,
    healthy: true,
    problems: [],
    running_jobs: [],
  };
}

function receiptPayload(agent: RawAgent, seq: number): Record<string, unknown> {
  return {
    v: 1,
    t: 'meter_receipt',
    sid: agent.sid,
    seq,
    id: 1,
    job_id: '00000000-0000-4000-8000-000000000001',
    fence: '1',
    receipt_seq: 1,
    from: '2026-01-01T00:00:00.000Z',
    to: '2026-01-01T00:00:30.000Z',
    seconds: 30,
    container_state: 'running',
  };
}

describe.each(DIALECTS)('agent channel MAC keys on %s', (dialect) => {
  let cp: GatewayTestApp;
  let machine: TestMachine;
  let heartbeats: number;
  let telemetry: number[];

  beforeEach(async () => {
    cp = await startGatewayApp(dialect, { settings: { pollIntervalMs: 60_000 } });
    machine = testMachine();
    cp.directory.add(machine);
    heartbeats = 0;
    telemetry = [];
    cp.channel.on('heartbeat', async () => {
      heartbeats += 1;
    });
    cp.channel.on('telemetry', async (_trx, _machineId, msg) => {
      telemetry.push(msg.id);
    });
  });

  afterEach(async () => {
    await cp.close();
  });

  const connect = (query = MAC, m: TestMachine = machine) => RawAgent.connect(cp.baseUrl, m, cp.controlPlanePublicKey, query);

  /** Connects with mac=1, agrees the keys and completes the handshake. */
  async function macAgent(m: TestMachine = machine): Promise<RawAgent> {
    const agent = await connect(MAC, m);
    agent.agreeMac();
    await agent.handshake();
    return agent;
  }

  async function closedWith(agent: RawAgent, reason: string): Promise<void> {
    expect(await agent.closed).toEqual({ code: CLOSE_CODES.protocolViolation, reason });
    expect(await counterValue(cp.metrics, 'ark_channel_closes_total', { reason })).toBeGreaterThanOrEqual(1);
  }

  it('agrees keys in the signed handshake: heartbeats and telemetry under the MAC, acknowledged under it, the handshake signed', async () => {
    const agent = await connect();
    expect(agent.offeredKx).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    agent.agreeMac();
    await agent.handshake();
    agent.heartbeat({ mac: true });
    expect(await agent.next('ack')).toMatchObject({ upto: 0 });
    agent.telemetry(1, { mac: true });
    expect(await agent.next('ack')).toMatchObject({ upto: 1 });
    expect(heartbeats).toBe(1);
    expect(telemetry).toEqual([1]);
    // Challenge and welcome carry signatures; both acks came under the MAC, and every frame verified.
    const members = agent.rawFrames.map((text) =>
      Object.keys(JSON.parse(text) as object)
        .sort()
        .join(','),
    );
    expect(members).toEqual(['p,s', 'p,s', 'm,p', 'm,p']);
    expect(agent.refusedFrames).toBe(0);
    // A signed heartbeat is still taken on a MAC connection: the signature is the stronger proof.
    agent.heartbeat();
    await agent.next('ack');
    expect(heartbeats).toBe(2);
    agent.close();
  });

  it('refuses a MAC frame whose payload was changed after sealing', async () => {
    const agent = await macAgent();
    const frame = JSON.parse(agent.seal(heartbeatPayload(agent, agent.seq + 1), { mac: true })) as { p: string; m: string };
    agent.sendRaw(JSON.stringify({ p: frame.p.replace('"uptime_s":1', '"uptime_s":2'), m: frame.m }));
    await closedWith(agent, 'bad_mac');
    expect(heartbeats).toBe(0);
  });

  it('refuses a MAC frame replayed on its own connection, and on the next connection of the same machine', async () => {
    const first = await macAgent();
    const recorded = first.seal(heartbeatPayload(first, first.seq + 1), { mac: true });
    first.sendRaw(recorded);
    await first.next('ack');
    first.sendRaw(recorded);
    await closedWith(first, 'replayed_seq');
    expect(heartbeats).toBe(1);

    // Another connection agrees other keys: the recorded frame does not verify there, whatever its seq and sid.
    const second = await macAgent();
    second.sendRaw(recorded);
    await closedWith(second, 'bad_mac');
    expect(heartbeats).toBe(1);
  });

  it('refuses a MAC on a type that must stay signed (a meter receipt), authentic or not', async () => {
    const agent = await macAgent();
    agent.sendRaw(agent.seal(receiptPayload(agent, agent.seq + 1), { mac: true }));
    await closedWith(agent, 'signature_required');
  });

  it('refuses a MAC on a connection that agreed no key: an agent that did not ask, or asked and answered without one', async () => {
    // Did not ask: no offer in the challenge, and its MAC (under keys it made up) is refused.
    const old = await connect('?v=1');
    expect(old.offeredKx).toBeNull();
    await old.handshake();
    old.heartbeat();
    await old.next('ack');
    // Keys agreed by another machine's connection (the newest connection of a machine replaces the older one).
    const neighbour = testMachine();
    cp.directory.add(neighbour);
    const other = await macAgent(neighbour);
    const forged = other.seal(heartbeatPayload(old, old.seq + 1), { mac: true });
    old.sendRaw(forged);
    await closedWith(old, 'bad_mac');
    other.close();

    // Asked, then answered the hello without a key: signatures only, MAC refused.
    const plain = await connect();
    await plain.handshake();
    plain.heartbeat();
    await plain.next('ack');
    expect(plain.rawFrames.every((text) => 's' in (JSON.parse(text) as object))).toBe(true);
    plain.send(
      { t: 'heartbeat', at: new Date().toISOString(), uptime_s: 1, healthy: true, problems: [], running_jobs: [] },
      { sign: () => Buffer.alloc(64) },
    );
    await closedWith(plain, 'bad_signature');
  });

  it('refuses a hello with a key nobody offered, or a key that agrees no secret', async () => {
    const unasked = await connect('?v=1');
    unasked.hello({ kx: Buffer.alloc(32, 9).toString('base64') });
    await closedWith(unasked, 'unexpected_kx');

    // The all-zero point (low order): the agreement would give a secret anyone knows.
    const lowOrder = await connect();
    lowOrder.hello({ kx: Buffer.alloc(32).toString('base64') });
    await closedWith(lowOrder, 'bad_kx');
    expect(cp.gateway.isConnected(machine.id)).toBe(false);
  });
});
