import { request } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import {
  CHANNEL_MAX_FRAME_BYTES,
  CHANNEL_PATH,
  ed25519PublicKeyFromBase64,
  nodeEd25519Signer,
  nodeEd25519Verifier,
  openFrame,
  signFrame,
} from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { DIALECTS } from '../testing/stores.js';
import { outboxWriter } from '../store/outbox.js';
import { CLOSE_CODES } from './session.js';
import { counterValue, type GatewayTestApp, startGatewayApp } from './testing/gateway-app.js';
import { RawAgent, type TestMachine, telemetryBody, testMachine } from './testing/raw-agent.js';

const nettest = { endpoint: 'http://127.0.0.1:1/nettest', timeout_ms: 5_000, download_bytes: 1000, upload_bytes: 1000 };

async function waitUntil(probe: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(DIALECTS)('agent gateway on %s', (dialect) => {
  let cp: GatewayTestApp;
  let machine: TestMachine;
  let applied: Array<{ machineId: string; id: number }>;
  let heartbeats: string[];
  let connects: string[];
  let disconnects: string[];

  beforeEach(async () => {
    cp = await startGatewayApp(dialect, { settings: { pollIntervalMs: 60_000 } });
    machine = testMachine();
    cp.directory.add(machine);
    applied = [];
    heartbeats = [];
    connects = [];
    disconnects = [];
    // Real registry entries: the spies are the handlers.
    cp.channel.on('telemetry', async (trx, machineId, msg) => {
      applied.push({ machineId, id: msg.id });
      // Proves the handler runs inside the gateway's transaction.
      await trx.selectFrom('agent_channel_state').select('machine_id').execute();
    });
    cp.channel.on('heartbeat', async (machineId) => {
      heartbeats.push(machineId);
    });
    cp.channel.onConnect(async (machineId) => {
      connects.push(machineId);
    });
    cp.channel.onDisconnect(async (machineId) => {
      disconnects.push(machineId);
    });
  });

  afterEach(async () => {
    await cp.close();
  });

  const connect = (m: TestMachine = machine, query?: string) => RawAgent.connect(cp.baseUrl, m, cp.controlPlanePublicKey, query);

  async function lastApplied(machineId = machine.id): Promise<number> {
    const row = await cp.store.db
      .selectFrom('agent_channel_state')
      .select('last_applied_msg_id')
      .where('machine_id', '=', machineId)
      .executeTakeFirst();
    return Number(row?.last_applied_msg_id ?? 0n);
  }

  /** The violation log line for a reason, with the machine id it names. */
  function violationLog(reason: string): Record<string, unknown> | undefined {
    return cp.logs.find((line) => line.msg === 'agent channel closed: protocol violation' && line.reason === reason);
  }

  it('runs the challenge handshake with signed frames and per-connection sequence numbers', async () => {
    const agent = await connect();
    expect(agent.sid).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(agent.challenge.length).toBeGreaterThanOrEqual(32);
    expect(agent.refusedFrames).toBe(0);
    const welcome = await agent.handshake();
    expect(welcome).toMatchObject({
      v: 1,
      sid: agent.sid,
      seq: 2,
      machine_id: machine.id,
      acked_upto: 0,
      heartbeat_interval_s: 15,
      telemetry_interval_s: 60,
    });
    await waitUntil(() => connects.length === 1);
    expect(connects).toEqual([machine.id]);
    expect(cp.gateway.isConnected(machine.id)).toBe(true);

    agent.heartbeat();
    const ack = await agent.next('ack');
    expect(ack).toMatchObject({ seq: 3, upto: 0 });
    expect(heartbeats).toEqual([machine.id]);

    agent.telemetry(1);
    expect(await agent.next('ack')).toMatchObject({ seq: 4, upto: 1 });
    expect(applied).toEqual([{ machineId: machine.id, id: 1 }]);
    expect(await lastApplied()).toBe(1);
    expect(await counterValue(cp.metrics, 'ark_channel_frames_total', { type: 'telemetry' })).toBe(1);
    // One group commit of one message, in the main queue (only meter receipts are grouped apart).
    const groups = (await cp.metrics.registry.getSingleMetric('ark_channel_apply_group_size')?.get())?.values ?? [];
    const ofMain = (suffix: string) =>
      groups.find(
        (v) => (v as { metricName?: string }).metricName === `ark_channel_apply_group_size_${suffix}` && v.labels.queue === 'main',
      )?.value;
    expect([ofMain('count'), ofMain('sum')]).toEqual([1, 1]);

    agent.close();
    await agent.closed;
    await waitUntil(() => disconnects.length === 1);
    expect(cp.gateway.isConnected(machine.id)).toBe(false);
  });

  it('refuses an unknown protocol version in the URL before upgrading', async () => {
    for (const query of ['?v=2', '']) {
      const response = await new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
        const req = request(`${cp.baseUrl}${CHANNEL_PATH}${query}`, {
          headers: {
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-version': '13',
            'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
          },
        });
        req.on('upgrade', () => reject(new Error('upgraded')));
        req.on('response', (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(response.status).toBe(400);
      const answer = JSON.parse(response.body);
      expect(answer).toMatchObject({ error: { code: 'CHANNEL_VERSION_UNSUPPORTED', retryable: false } });
      // The API's own answer: a fresh request id in the body and the header, no caching, the security headers.
      expect(response.headers['x-request-id']).toBe(answer.error.request_id);
      expect(response.headers['cache-control']).toBe('private, no-store');
      expect(response.headers['x-content-type-options']).toBe('nosniff');
    }
    expect(await counterValue(cp.metrics, 'ark_channel_closes_total', { reason: 'unknown_version_url' })).toBe(2);
  });

  // Each case: a connected agent sends one bad telemetry frame. The connection closes, the reason is logged with
  // the machine id and counted, and the telemetry handler never runs.
  const violations: Array<{ name: string; reason: string; send: (agent: RawAgent) => void }> = [
    {
      name: 'a tampered payload',
      reason: 'bad_signature',
      send: (agent) => {
        const frame = JSON.parse(agent.frame(telemetryBody(1))) as { p: string; s: string };
        agent.sendRaw(JSON.stringify({ p: frame.p.replace('12.5', '99.5'), s: frame.s }));
      },
    },
    {
      name: 'a frame signed by another key',
      reason: 'bad_signature',
      send: (agent) => agent.send(telemetryBody(1), { sign: nodeEd25519Signer(generateKeyPairSync('ed25519').privateKey) }),
    },
    {
      name: 'an unsigned frame',
      reason: 'unsigned',
      send: (agent) => {
        const frame = JSON.parse(agent.frame(telemetryBody(1))) as { p: string };
        agent.sendRaw(JSON.stringify({ p: frame.p }));
      },
    },
    {
      name: 'a replayed frame (the same seq again)',
      reason: 'replayed_seq',
      send: (agent) => {
        agent.seq -= 1;
        agent.telemetry(1);
      },
    },
    {
      name: 'an out-of-order seq',
      reason: 'out_of_order_seq',
      send: (agent) => {
        agent.seq += 1;
        agent.telemetry(1);
      },
    },
    {
      name: 'a frame from another connection (other sid)',
      reason: 'wrong_session',
      send: (agent) => {
        agent.sid = 'another-connections-sid';
        agent.telemetry(1);
      },
    },
    {
      name: 'an unknown protocol version in the payload',
      reason: 'unknown_version',
      send: (agent) => agent.send({ ...telemetryBody(1), v: 2 }),
    },
    {
      name: 'a payload that does not match its schema',
      reason: 'invalid_payload',
      send: (agent) => agent.send({ ...telemetryBody(1), id: 0 }),
    },
    {
      name: 'a binary frame',
      reason: 'binary',
      send: (agent) => agent.sendRaw(Buffer.from(agent.frame(telemetryBody(1)))),
    },
    {
      name: 'a second hello',
      reason: 'unexpected_type',
      send: (agent) => agent.hello(),
    },
  ];

  for (const violation of violations) {
    it(`closes the connection on ${violation.name}, logs it and never processes it`, async () => {
      const agent = await connect();
      await agent.handshake();
      violation.send(agent);
      const closed = await agent.closed;
      expect(closed).toEqual({ code: 1008, reason: violation.reason });
      expect(applied).toEqual([]);
      expect(await lastApplied()).toBe(0);
      expect(violationLog(violation.reason)).toMatchObject({ machineId: machine.id, component: 'agent-gateway' });
      expect(await counterValue(cp.metrics, 'ark_channel_closes_total', { reason: violation.reason })).toBe(1);
    });
  }

  it('refuses a type the catalog does not hold, or one only the control plane sends, with 4004 and never acknowledges it', async () => {
    // A newer agent's reliable message: shaped like one (an id), but no type of this control plane's catalog.
    const agent = await connect();
    await agent.handshake();
    agent.telemetry(1);
    expect(await agent.next('ack')).toMatchObject({ upto: 1 });
    agent.send({ t: 'self_test_result', id: 2, passed: true });
    expect(await agent.closed).toEqual({ code: CLOSE_CODES.unknownType, reason: 'unknown_type' });
    expect(CLOSE_CODES.unknownType).toBe(4004);
    // Not acknowledged (the agent keeps it queued), not marked applied.
    expect(agent.received.filter((m) => m.t === 'ack')).toEqual([]);
    expect(await lastApplied()).toBe(1);
    expect(violationLog('unknown_type')).toMatchObject({ machineId: machine.id, detail: 'self_test_result' });

    // A control plane's message sent by an agent: the wrong direction is refused the same way.
    const confused = await connect();
    await confused.handshake();
    confused.send({ t: 'ack', upto: 5 });
    expect(await confused.closed).toEqual({ code: CLOSE_CODES.unknownType, reason: 'unknown_type' });
    expect(cp.logs).toContainEqual(expect.objectContaining({ reason: 'unknown_type', detail: 'ack is sent by the control-plane' }));
    expect(await counterValue(cp.metrics, 'ark_channel_closes_total', { reason: 'unknown_type' })).toBe(2);
    expect(applied).toEqual([{ machineId: machine.id, id: 1 }]);
    expect(await lastApplied()).toBe(1);
  });

  it('closes on an oversized frame (the WebSocket layer refuses it before it is read)', async () => {
    const agent = await connect();
    await agent.handshake();
    agent.send({ ...telemetryBody(1), padding: 'x'.repeat(CHANNEL_MAX_FRAME_BYTES) });
    const closed = await agent.closed;
    expect(closed.code).toBe(1009);
    expect(applied).toEqual([]);
    await waitUntil(() => violationLog('oversized') !== undefined);
    expect(violationLog('oversized')).toMatchObject({ machineId: machine.id });
  });

  it('refuses a hello from an unknown machine exactly like a forged one, with a bad signature, or answering another challenge', async () => {
    // An id nobody enrolled, and our machine's id signed with another key: the same close, so a stranger cannot
    // tell which machine ids exist. Only the log says which was which.
    const stranger = testMachine();
    const unknown = await connect(stranger);
    unknown.hello();
    expect(await unknown.closed).toEqual({ code: 1008, reason: 'bad_signature' });
    const impostor = await connect({ ...stranger, id: machine.id });
    impostor.hello();
    expect(await impostor.closed).toEqual({ code: 1008, reason: 'bad_signature' });
    const refusals = cp.logs.filter((line) => line.msg === 'agent channel closed: protocol violation' && line.reason === 'bad_signature');
    expect(refusals).toContainEqual(expect.objectContaining({ machineId: stranger.id, detail: 'unknown machine', authenticated: false }));
    expect(refusals).toContainEqual(expect.objectContaining({ machineId: machine.id, authenticated: false }));
    // Unsigned: the same answer for an unknown id as for ours (below).
    const unsignedStranger = await connect(stranger);
    unsignedStranger.sendRaw(
      JSON.stringify({ p: (JSON.parse(unsignedStranger.frame({ t: 'hello', machine_id: stranger.id })) as { p: string }).p }),
    );
    expect(await unsignedStranger.closed).toEqual({ code: 1008, reason: 'unsigned' });

    // A hello recorded on one connection, replayed on another: its challenge (and sid) belong to the first.
    const first = await connect();
    const recorded = first.frame({
      t: 'hello',
      machine_id: machine.id,
      challenge: first.challenge,
      agent_time: new Date().toISOString(),
      agent_version: 'test',
      commands_applied_upto: 0,
    });
    first.close();
    const second = await connect();
    second.sendRaw(recorded);
    expect(await second.closed).toEqual({ code: 1008, reason: 'wrong_session' });

    const third = await connect();
    third.hello({ challenge: first.challenge });
    expect(await third.closed).toEqual({ code: 1008, reason: 'bad_challenge' });

    const unsignedHello = await connect();
    const frame = JSON.parse(unsignedHello.frame({ t: 'hello', machine_id: machine.id })) as { p: string };
    unsignedHello.sendRaw(JSON.stringify({ p: frame.p }));
    expect(await unsignedHello.closed).toEqual({ code: 1008, reason: 'unsigned' });

    const notHello = await connect();
    notHello.heartbeat();
    expect(await notHello.closed).toEqual({ code: 1008, reason: 'expected_hello' });
    expect(connects).toEqual([]);
  });

  it('applies a reliable message once, however often it is resent, and acknowledges cumulatively', async () => {
    const agent = await connect();
    await agent.handshake();
    agent.telemetry(1);
    agent.telemetry(2);
    expect((await agent.next('ack')).upto).toBe(1);
    expect((await agent.next('ack')).upto).toBe(2);
    // The same ids again on the same connection (new seqs): acknowledged, not applied.
    agent.telemetry(1);
    agent.telemetry(2);
    expect((await agent.next('ack')).upto).toBe(2);
    expect((await agent.next('ack')).upto).toBe(2);
    agent.close();
    await agent.closed;

    // After a reconnect the welcome says what was applied; a resend is still applied once.
    const again = await connect();
    const welcome = await again.handshake();
    expect(welcome.acked_upto).toBe(2);
    again.telemetry(2);
    again.telemetry(3);
    expect((await again.next('ack')).upto).toBe(2);
    expect((await again.next('ack')).upto).toBe(3);
    expect(applied.map((a) => a.id)).toEqual([1, 2, 3]);
    expect(await lastApplied()).toBe(3);
  });

  it('rolls a failing handler back, does not acknowledge, and applies the resend after a reconnect', async () => {
    let failures = 1;
    cp.channel.on('telemetry', async () => {
      if (failures > 0) {
        failures -= 1;
        throw new Error('store unavailable');
      }
    });
    const agent = await connect();
    await agent.handshake();
    agent.telemetry(1);
    expect(await agent.closed).toEqual({ code: 1011, reason: 'handler_failed' });
    expect(await lastApplied()).toBe(0);
    expect(agent.received.filter((m) => m.t === 'ack')).toEqual([]);

    const again = await connect();
    expect((await again.handshake()).acked_upto).toBe(0);
    again.telemetry(1);
    expect((await again.next('ack')).upto).toBe(1);
    expect(await lastApplied()).toBe(1);
    // The first handler ran in both attempts; only the second one committed.
    expect(applied.map((a) => a.id)).toEqual([1, 1]);
  });

  it('delivers commands queued while the agent was offline after it connects, each once, in order', async () => {
    const now = new Date();
    for (let i = 0; i < 3; i++)
      await outboxWriter().enqueue(cp.store.db, {
        machineId: machine.id,
        kind: 'update_go_live',
        body: { go_live: i % 2 === 0 },
        now,
      });
    const agent = await connect();
    await agent.handshake();
    const first = await agent.next('command');
    const second = await agent.next('command');
    const third = await agent.next('command');
    expect([first, second, third].map((c) => [c.command_seq, c.kind, c.body])).toEqual([
      [1, 'update_go_live', { go_live: true }],
      [2, 'update_go_live', { go_live: false }],
      [3, 'update_go_live', { go_live: true }],
    ]);
    // Acknowledge two, drop the connection: the third is resent after the reconnect, the first two are not.
    agent.send({ t: 'command_ack', upto: 2 });
    agent.heartbeat();
    await agent.next('ack');
    agent.close();
    await agent.closed;

    const again = await connect();
    await again.handshake({ commands_applied_upto: 2 });
    const resent = await again.next('command');
    expect(resent).toMatchObject({ command_seq: 3, command_id: third.command_id });

    // Queued while connected: the in-process wake-up delivers it at once (the poll is a minute away).
    const queued = await outboxWriter().enqueue(cp.store.db, {
      machineId: machine.id,
      kind: 'run_nettest',
      body: nettest,
      now,
    });
    expect(queued.commandSeq).toBe(4);
    expect(await again.next('command')).toMatchObject({ command_seq: 4, command_id: queued.commandId, kind: 'run_nettest', body: nettest });
    again.send({ t: 'command_ack', upto: 4 });
    again.heartbeat();
    await again.next('ack');
    const pending = await cp.store.db.selectFrom('agent_outbox').select('command_seq').where('acked_at', 'is', null).execute();
    expect(pending).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(again.received.filter((m) => m.t === 'command')).toEqual([]);
  });

  it('resumes commands from what the agent says it applied when the acknowledgement was lost', async () => {
    const now = new Date();
    await outboxWriter().enqueue(cp.store.db, {
      machineId: machine.id,
      kind: 'update_go_live',
      body: { go_live: true },
      now,
    });
    await outboxWriter().enqueue(cp.store.db, {
      machineId: machine.id,
      kind: 'update_go_live',
      body: { go_live: false },
      now,
    });
    const agent = await connect();
    // Claims more than was ever queued: clamped, so later commands are not skipped.
    await agent.handshake({ commands_applied_upto: 1 });
    expect(await agent.next('command')).toMatchObject({ command_seq: 2 });
    agent.close();
    await agent.closed;
    const again = await connect();
    await again.handshake({ commands_applied_upto: 50 });
    await outboxWriter().enqueue(cp.store.db, {
      machineId: machine.id,
      kind: 'update_go_live',
      body: { go_live: true },
      now,
    });
    expect(await again.next('command')).toMatchObject({ command_seq: 3 });
  });

  it('closes a connection that does not finish the handshake, or goes quiet, by its clock (advanced, never waited for)', async () => {
    await cp.close();
    const clock = new ManualClock();
    cp = await startGatewayApp(dialect, { clock, settings: { pollIntervalMs: 60_000 } });
    cp.directory.add(machine);
    // The defaults: 10 s for the hello, three 15 s heartbeat intervals of quiet; swept every second.
    const { handshakeTimeoutMs, idleTimeoutMs } = cp.gateway.settings;
    expect([handshakeTimeoutMs, idleTimeoutMs]).toEqual([10_000, 45_000]);
    const closes = (reason: string) => counterValue(cp.metrics, 'ark_channel_closes_total', { reason });
    // The close follows the advance at once (loopback I/O only); on real timers it would take the whole timeout.
    const closedPromptly = (agent: RawAgent) =>
      Promise.race([
        agent.closed,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('not closed when the clock passed the timeout')), 5_000)),
      ]);

    const silent = await connect();
    await clock.advance(handshakeTimeoutMs);
    expect(await closes('handshake_timeout')).toBe(0);
    await clock.advance(1_000);
    expect(await closedPromptly(silent)).toEqual({ code: 4002, reason: 'handshake_timeout' });

    const quiet = await connect();
    await quiet.handshake();
    quiet.heartbeat();
    await quiet.next('ack');
    // Quiet time is measured on the monotonic reading: a wall-clock step (NTP) an hour ahead closes nothing.
    clock.set(clock.now().getTime() + 3_600_000);
    await clock.advance(idleTimeoutMs - 5_000);
    expect(await closes('idle_timeout')).toBe(0);
    // A frame starts the quiet time again.
    quiet.heartbeat();
    await quiet.next('ack');
    await clock.advance(idleTimeoutMs);
    expect(await closes('idle_timeout')).toBe(0);
    expect(cp.gateway.isConnected(machine.id)).toBe(true);
    await clock.advance(1_000);
    expect(await closedPromptly(quiet)).toEqual({ code: 4002, reason: 'idle_timeout' });
    expect(await closes('idle_timeout')).toBe(1);
  });

  it('keeps the newest connection of a machine and closes the older one', async () => {
    const older = await connect();
    await older.handshake();
    const newer = await connect();
    await newer.handshake();
    expect(await older.closed).toEqual({ code: 4001, reason: 'replaced' });
    newer.heartbeat();
    await newer.next('ack');
    expect(cp.gateway.connectedCount).toBe(1);
    // The replaced connection ending does not mark the machine disconnected.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(disconnects).toEqual([]);
  });

  it('closes connections on shutdown', async () => {
    const agent = await connect();
    await agent.handshake();
    const closing = cp.app.close();
    expect((await agent.closed).code).toBe(1001);
    await closing;
  });

  it('signs every frame with the control-plane key from the store', async () => {
    const agent = await connect();
    await agent.handshake();
    const raw = await new Promise<Buffer>((resolve) => {
      agent.ws.once('message', (data: Buffer) => resolve(data));
      agent.heartbeat();
    });
    const verify = nodeEd25519Verifier(ed25519PublicKeyFromBase64(cp.controlPlanePublicKey));
    expect(openFrame(raw, verify, 'control-plane').ok).toBe(true);
    const other = nodeEd25519Verifier(generateKeyPairSync('ed25519').publicKey);
    expect(openFrame(raw, other, 'control-plane')).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(signFrame).toBeTypeOf('function');
  });
});
