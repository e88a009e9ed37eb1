// Signed webhooks end to end on each store (issue 10): the real control plane (`ark-cp serve`) delivering to a real
// HTTP server in this test, every delivery verified with the `standardwebhooks` package's Webhook.verify. A failed
// delivery is retried on the schedule, 410 disables the endpoint, a rotation signs with both secrets, and a kill -9
// of the control plane in the middle of a burst loses nothing and never gives one event two ids.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '@ark/control-plane/clock';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp, testConfig } from '@ark/control-plane/testing/app';
import {
  agentHeartbeat,
  deliver as deliverToAgent,
  fund,
  liveMachine,
  meterReceipt,
  reserveJob,
  runJob,
} from '@ark/control-plane/testing/renting';
import { machineKeyPair, sampleManifest } from '@ark/control-plane/testing/hosting';
import { hardwareReceiptMessage, RECORDED_L4_GPUS, receiptBody, signHardwareReceipt } from '@ark/control-plane/testing/receipts';
import { httpWebhookSender } from '@ark/control-plane/workers/webhooks';
import { WEBHOOK_EVENT_TYPES } from '@ark/shared';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { Webhook } from 'standardwebhooks';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { waitFor } from '../harness/processes.js';
import { type DepositChain, randomDepositXpub, setupDepositChain, x402Setup } from './deposit-helpers.js';
import { api, type ControlPlane, controlPlaneCli, startControlPlane } from './host-side-helpers.js';
import {
  addWithdrawalAddress,
  adminSession,
  call,
  fundedPayoutWallet,
  hostEarns,
  PASSWORD,
  randomAddress,
  randomTag,
  steppedUpSession,
  USDC,
  waitWithdrawal,
} from './payout-helpers.js';

interface Received {
  id: string;
  /** The path and query it was sent to. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/** A webhook receiver on loopback: records every request and answers what the test scripted (200 unless told). */
class Receiver {
  readonly requests: Received[] = [];
  /** Statuses to answer, per webhook-id, in turn; then 200. */
  readonly script = new Map<string, number[]>();
  /** Answer every request with this status while set. */
  always: number | null = null;
  delayMs = 0;
  server!: Server;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const id = String(req.headers['webhook-id']);
        const scripted = this.script.get(id)?.shift();
        const status = this.always ?? scripted ?? 200;
        setTimeout(() => {
          this.requests.push({ id, url: String(req.url), headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), status });
          res.writeHead(status).end();
        }, this.delayMs);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
  }

  get url(): string {
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening');
    return `http://127.0.0.1:${address.port}/hooks/ark`;
  }

  /** Accepted deliveries (answered 2xx) of one event type. */
  accepted(type?: string): Received[] {
    return this.requests.filter((r) => r.status < 300 && (type === undefined || JSON.parse(r.body).type === type));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const headersOf = (r: Received): Record<string, string> => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});

type Dialect = 'sqlite' | 'postgres';
type VerifiedEvent = { type: string; timestamp: string; data: any };

/** Event types a real receiver got and verified in this file, per store: the last test checks every listed type is here. */
const verifiedTypes: Record<Dialect, Set<string>> = { sqlite: new Set(), postgres: new Set() };

/** Verifies a delivery with the endpoint's secret (Standard Webhooks), records its type, and answers the event. */
function verifyDelivery(dialect: Dialect, secret: string, r: Received): VerifiedEvent {
  const event = new Webhook(secret).verify(r.body, headersOf(r)) as VerifiedEvent;
  verifiedTypes[dialect].add(event.type);
  return event;
}

describe.each(['sqlite', 'postgres'] as const)('signed webhooks on %s', (dialect) => {
  let database: TestDatabase | null = null;
  let cp: ControlPlane;
  let receiver: Receiver;
  let renterKey: string;
  let adminSession: string;
  let env: NodeJS.ProcessEnv;
  let dataDir: string;

  const post = (path: string, token: string, body?: unknown) => api(cp.base, 'POST', path, { token, body, idempotent: true });
  const createEndpoint = async (eventTypes: string[]) => {
    const created = await post('/api/v1/webhooks', renterKey, { url: receiver.url, event_types: eventTypes, description: 'e2e' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; secret: string; state: string };
  };
  const deliveries = async (endpointId: string) => {
    const answer = await api(cp.base, 'GET', `/api/v1/webhooks/${endpointId}/deliveries?limit=100`, { token: renterKey });
    expect(answer.status).toBe(200);
    return answer.body.items as Array<{
      delivery_id: string;
      event_id: string;
      state: string;
      attempts: number;
      last_status: number | null;
    }>;
  };
  const start = async (port?: number) => startControlPlane({ port, dataDir, databaseUrl: database?.url ?? null, env });

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    if (dialect === 'postgres') database = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'ark-e2e-webhooks-'));
    env = {
      ARK_SECRET_KEY: randomBytes(32).toString('hex'),
      ARK_WEBHOOK_ALLOW_PRIVATE: 'true',
      ARK_WEBHOOK_POLL_INTERVAL_MS: '50',
      ARK_WEBHOOK_TIMEOUT_S: '2',
    };
    cp = await start();
    const renterEmail = `renter-${randomUUID().slice(0, 8)}@example.test`;
    await controlPlaneCli(cp, ['accounts', 'create', '--email', renterEmail, '--role', 'renter', '--password', PASSWORD, '--verified']);
    renterKey = JSON.parse(
      await controlPlaneCli(cp, ['keys', 'create', '--email', renterEmail, '--scopes', 'renter', '--label', 'e2e']),
    ).secret;
    const adminEmail = `admin-${randomUUID().slice(0, 8)}@example.test`;
    await controlPlaneCli(cp, ['accounts', 'create', '--email', adminEmail, '--role', 'admin', '--password', PASSWORD, '--verified']);
    const signIn = await api(cp.base, 'POST', '/api/v1/auth/sessions', { body: { email: adminEmail, password: PASSWORD } });
    expect(signIn.status).toBe(201);
    adminSession = signIn.body.session_token;
  }, 180_000);

  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
    await receiver?.close();
    await database?.drop();
  });

  it('delivers a test event signed per Standard Webhooks; the secret is shown once; a 500 is retried with the same id', async () => {
    const endpoint = await createEndpoint(['ticket.message_created']);
    expect(endpoint.secret).toMatch(/^whsec_/);
    const listed = await api(cp.base, 'GET', '/api/v1/webhooks', { token: renterKey });
    expect(JSON.stringify(listed.body)).not.toContain(endpoint.secret);
    const verifier = new Webhook(endpoint.secret);

    const queued = await post(`/api/v1/webhooks/${endpoint.id}/test`, renterKey);
    expect(queued.status).toBe(202);
    const eventId = queued.body.event_id as string;
    // The receiver refuses the first attempt.
    receiver.script.set(eventId, [500]);
    const received = await waitFor(() => receiver.accepted().find((r) => r.id === eventId), {
      timeoutMs: 20_000,
      intervalMs: 50,
      description: 'the test event, retried',
    });
    const attempts = receiver.requests.filter((r) => r.id === eventId);
    expect(attempts.map((a) => a.status)).toEqual([500, 200]);
    // Both attempts carried the same id and body; each verifies.
    expect(attempts[0]?.body).toBe(received.body);
    for (const attempt of attempts) expect(verifyDelivery(dialect, endpoint.secret, attempt)).toEqual(JSON.parse(attempt.body));
    expect(JSON.parse(received.body)).toEqual({
      type: 'webhook.test',
      timestamp: expect.stringMatching(/Z$/),
      data: { endpoint_id: endpoint.id },
    });
    // A forged body does not verify.
    expect(() => verifier.verify(received.body.replace('webhook.test', 'webhook.tost'), headersOf(received))).toThrow();
    const seen = (await deliveries(endpoint.id)).find((d) => d.event_id === eventId);
    expect(seen).toMatchObject({ state: 'succeeded', attempts: 2, last_status: 200 });

    // Replay: a new delivery of the same event, with the same webhook-id and body.
    const replay = await post(`/api/v1/webhooks/${endpoint.id}/deliveries/${seen?.delivery_id}/replay`, renterKey);
    expect(replay.status).toBe(202);
    expect(replay.body.event_id).toBe(eventId);
    await waitFor(() => receiver.accepted().filter((r) => r.id === eventId).length === 2, {
      timeoutMs: 10_000,
      intervalMs: 50,
      description: 'replay',
    });
    expect(
      receiver
        .accepted()
        .filter((r) => r.id === eventId)
        .map((r) => r.body),
    ).toEqual([received.body, received.body]);
    expect((await api(cp.base, 'DELETE', `/api/v1/webhooks/${endpoint.id}`, { token: renterKey })).status).toBe(200);
  }, 60_000);

  it('rotation signs with both secrets; 410 disables the endpoint', async () => {
    const endpoint = await createEndpoint(['ticket.message_created']);
    const rotated = await post(`/api/v1/webhooks/${endpoint.id}/rotate-secret`, renterKey);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    const queued = await post(`/api/v1/webhooks/${endpoint.id}/test`, renterKey);
    const received = await waitFor(() => receiver.accepted().find((r) => r.id === queued.body.event_id), {
      timeoutMs: 10_000,
      intervalMs: 50,
      description: 'the event after rotation',
    });
    const signatures = String(received.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    for (const s of signatures) expect(s).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    // A receiver on either secret accepts it.
    expect(new Webhook(rotated.body.secret).verify(received.body, headersOf(received))).toBeTruthy();
    expect(new Webhook(endpoint.secret).verify(received.body, headersOf(received))).toBeTruthy();

    receiver.always = 410;
    try {
      await post(`/api/v1/webhooks/${endpoint.id}/test`, renterKey);
      const disabled = await waitFor(
        async () => {
          const list = await api(cp.base, 'GET', '/api/v1/webhooks?limit=100', { token: renterKey });
          const found = list.body.items.find((e: any) => e.id === endpoint.id);
          return found?.state === 'disabled' ? found : null;
        },
        { timeoutMs: 10_000, intervalMs: 100, description: 'the endpoint disabled on 410' },
      );
      expect(disabled.disabled_reason).toBe('gone');
    } finally {
      receiver.always = null;
    }
    await api(cp.base, 'DELETE', `/api/v1/webhooks/${endpoint.id}`, { token: renterKey });
  }, 60_000);

  it('ticket messages are delivered in order, none lost across a kill -9, none under two ids', async () => {
    const endpoint = await createEndpoint(['ticket.message_created']);
    const opened = await post('/api/v1/tickets', renterKey, { category: 'billing', text: 'please look' });
    expect(opened.status).toBe(201);
    const ticketId = opened.body.ticket_id as string;
    const before = receiver.requests.length;
    receiver.delayMs = 150;
    const MESSAGES = 12;
    for (let i = 0; i < MESSAGES; i++) {
      const written = await post(`/api/v1/tickets/${ticketId}/messages`, adminSession, { text: `answer ${i}` });
      expect(written.status).toBe(201);
    }
    // Some delivered, some not yet: kill -9 the control plane in the middle and start it again on the same store.
    await waitFor(() => receiver.requests.length - before >= 2, { timeoutMs: 10_000, intervalMs: 10, description: 'first deliveries' });
    const port = cp.port;
    await cp.process.stop('SIGKILL');
    const deliveredAtKill = receiver.requests.length - before;
    receiver.delayMs = 0;
    cp = await start(port);
    await waitFor(
      () => new Set(receiver.accepted('ticket.message_created').map((r) => JSON.parse(r.body).data.message_id)).size >= MESSAGES,
      {
        timeoutMs: 30_000,
        intervalMs: 50,
        description: 'every message delivered after the restart',
      },
    );
    expect(deliveredAtKill).toBeLessThan(MESSAGES);

    const got = receiver.accepted('ticket.message_created');
    const idsByMessage = new Map<string, Set<string>>();
    for (const r of got) {
      expect(verifyDelivery(dialect, endpoint.secret, r)).toBeTruthy();
      const data = JSON.parse(r.body).data;
      expect(data).toMatchObject({ ticket_id: ticketId, author_role: 'admin', job_id: null });
      const ids = idsByMessage.get(data.message_id) ?? new Set<string>();
      ids.add(r.id);
      idsByMessage.set(data.message_id, ids);
    }
    expect(idsByMessage.size).toBe(MESSAGES);
    for (const ids of idsByMessage.values()) expect(ids.size).toBe(1);
    // In order: the first delivery of each event came in the order the messages were written.
    const detail = await api(cp.base, 'GET', `/api/v1/tickets/${ticketId}`, { token: renterKey });
    const written = detail.body.messages.filter((m: any) => m.author_role === 'admin').map((m: any) => m.message_id);
    const firstSeen: string[] = [];
    for (const r of got) {
      const id = JSON.parse(r.body).data.message_id;
      if (!firstSeen.includes(id)) firstSeen.push(id);
    }
    expect(firstSeen).toEqual(written);
  }, 90_000);

  it('refuses endpoints on loopback, private or link-local addresses unless the operator allows them', async () => {
    const t = await createTestApp(dialect);
    try {
      const account = await seedAccount(t.ctx);
      for (const url of [
        'http://127.0.0.1:9/x',
        'https://127.0.0.1/x',
        'https://localhost/x',
        'https://[::1]/x',
        'https://169.254.169.254/latest',
      ]) {
        const answer = await t.app.inject({
          method: 'POST',
          url: '/api/v1/webhooks',
          headers: { ...bearer(account.apiKey), 'idempotency-key': randomUUID() },
          payload: { url, event_types: ['job.state_changed'] },
        });
        expect(answer.statusCode, url).toBe(422);
        expect(answer.json().error.code).toBe('WEBHOOK_URL_REFUSED');
      }
    } finally {
      await t.destroy();
    }
  });
});

/** Metered in the event test: 90 % of the one-hour reservation. */
const METERED_MS = 3_240_000;

// What the areas emit, in the transaction of their change: job state changes (to the renter and the host), budget
// thresholds, machine online/offline. The real app in process with a manual clock, the real sender to a real receiver.
describe.each(['sqlite', 'postgres'] as const)('events emitted on %s', (dialect) => {
  /** Subscribes `who` to `types`, delivered to `receiver` tagged with the account (`?for=`). */
  const subscribeWith = async (t: TestApp<ManualClock>, receiver: Receiver, who: SeededAccount, types: string[]) => {
    const answer = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: { ...bearer(who.apiKey), 'idempotency-key': randomUUID() },
      payload: { url: `${receiver.url}?for=${who.accountId}`, event_types: types },
    });
    expect(answer.statusCode, answer.body).toBe(201);
    return answer.json() as { id: string; secret: string };
  };
  /** Sends everything owed with the real sender, then answers one account's deliveries in arrival order, verified. */
  const deliveredTo = async (t: TestApp<ManualClock>, receiver: Receiver, hook: { secret: string }, accountId: string) => {
    for (let round = 0; round < 50; round++) {
      const step = await t.ctx.services.webhooks.deliverDue(httpWebhookSender);
      if (step.attempted === 0) break;
    }
    return receiver.requests
      .filter((r) => r.status === 200 && r.url.endsWith(`?for=${accountId}`))
      .map((r) => verifyDelivery(dialect, hook.secret, r));
  };

  it('job state changes, budget thresholds and machine liveness reach the subscribed endpoints, in order, signed', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const base = testConfig();
    // The manual clock ends near the wall clock (the hour of metering below is advanced, not waited), so receivers
    // accept the deliveries' timestamps (Standard Webhooks tolerates five minutes).
    const clock = new ManualClock(new Date(Date.now() - METERED_MS - 2000));
    const t = await createTestApp(dialect, { clock, configOverrides: { webhooks: { ...base.webhooks, allowPrivate: true } } });
    try {
      const machine = await liveMachine(t.ctx, t.app);
      const renter = await seedAccount(t.ctx, { role: 'renter' });
      await fund(t.ctx, renter.accountId, 1_000_000_000n);
      const subscribe = (who: SeededAccount, types: string[]) => subscribeWith(t, receiver, who, types);
      const renterHook = await subscribe(renter, ['job.state_changed', 'job.budget_threshold']);
      const hostHook = await subscribe(machine.host, ['machine.online', 'machine.offline', 'job.state_changed']);

      expect(await t.ctx.services.webhooks.tellLivenessChanges()).toBe(1);
      expect(await t.ctx.services.webhooks.tellLivenessChanges()).toBe(0);
      const { jobId } = await reserveJob(t.app, renter, machine);
      const ready = await runJob(t, machine.machineId, jobId);
      // 60 % of the hour, then 90 %: the charges cross 50 % and then 80 % of the budget.
      await t.clock.advance((METERED_MS * 2) / 3);
      await deliverToAgent(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, ready, t.clock.now()));
      const mid = t.clock.now();
      await t.clock.advance(METERED_MS / 3);
      await deliverToAgent(t.ctx, machine.machineId, meterReceipt(jobId, 1, 2, mid, t.clock.now()));
      // The agent falls silent past three heartbeat intervals.
      expect(await t.ctx.services.webhooks.tellLivenessChanges()).toBe(1);

      // Each endpoint's deliveries, in the order they arrived, verified with its own secret.
      const renterEvents = await deliveredTo(t, receiver, renterHook, renter.accountId);
      const hostEvents = await deliveredTo(t, receiver, hostHook, machine.host.accountId);

      const jobEvents = await t.app.inject({
        method: 'GET',
        url: `/api/v1/jobs/${jobId}/events?limit=100`,
        headers: bearer(renter.apiKey),
      });
      const states = [
        'RESERVED',
        ...jobEvents
          .json()
          .items.filter((e: any) => e.kind === 'state_changed')
          .map((e: any) => e.data.to),
      ];
      expect(states.slice(0, 3)).toEqual(['RESERVED', 'STARTING', 'RUNNING']);
      const jobChanges = (events: Array<{ type: string; data: any }>) =>
        events.filter((e) => e.type === 'job.state_changed').map((e) => e.data.to);
      expect(jobChanges(renterEvents)).toEqual(states);
      expect(jobChanges(hostEvents)).toEqual(states);
      expect(renterEvents.find((e) => e.type === 'job.state_changed')?.data).toEqual({
        job_id: jobId,
        from: null,
        to: 'RESERVED',
        machine_id: machine.machineId,
      });
      expect(renterEvents.filter((e) => e.type === 'job.budget_threshold').map((e) => e.data.percent)).toEqual([50, 80]);
      expect(hostEvents.filter((e) => e.type.startsWith('machine.')).map((e) => [e.type, e.data.machine_id])).toEqual([
        ['machine.online', machine.machineId],
        ['machine.offline', machine.machineId],
      ]);
      // Nothing the host did not ask for.
      expect(hostEvents.some((e) => e.type === 'job.budget_threshold')).toBe(false);
    } finally {
      await t.destroy();
      await receiver.close();
    }
  });

  it('a job its machine failed is credited to its renter automatically: renter and host are told once each, signed', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const base = testConfig();
    // The manual clock ends near the wall clock, where the deliveries are sent and verified.
    const clock = new ManualClock(new Date(Date.now() - 200_000));
    const t = await createTestApp(dialect, {
      clock,
      configOverrides: { jobReconcileTimeoutMs: 120_000, webhooks: { ...base.webhooks, allowPrivate: true } },
    });
    try {
      const machine = await liveMachine(t.ctx, t.app);
      const renter = await seedAccount(t.ctx, { role: 'renter' });
      await fund(t.ctx, renter.accountId, 10_000_000n);
      const renterHook = await subscribeWith(t, receiver, renter, ['job.credited']);
      const hostHook = await subscribeWith(t, receiver, machine.host, ['job.credited']);
      const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000' });
      const start = await runJob(t, machine.machineId, jobId);
      // The last heartbeat that saw the container running 20 s in; the receipt covers 30 s; then the agent is gone.
      await t.clock.advance(20_000);
      await agentHeartbeat(t.ctx, machine.machineId, [{ job_id: jobId, fence: '1', container_state: 'running' }]);
      await t.clock.advance(10_000);
      await deliverToAgent(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, t.clock.now()));
      const sweep = () => t.ctx.services.jobs.sweeps.runOnce(t.clock.now());
      await t.clock.advance(46_000);
      await sweep();
      await t.clock.advance(121_000);
      await sweep();
      const job = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}`, headers: bearer(renter.apiKey) });
      expect(job.json()).toMatchObject({ state: 'FAILED', close_reason: 'agent_lost' });

      const renterEvents = await deliveredTo(t, receiver, renterHook, renter.accountId);
      const hostEvents = await deliveredTo(t, receiver, hostHook, machine.host.accountId);
      for (const events of [renterEvents, hostEvents]) {
        expect(events.map((e) => e.type)).toEqual(['job.credited']);
        expect(events[0]?.data).toMatchObject({ job_id: jobId, reason: 'agent_lost' });
        expect(BigInt(events[0]?.data.credit_micro)).toBeGreaterThan(0n);
      }
    } finally {
      await t.destroy();
      await receiver.close();
    }
  });

  it('a machine delisted under the reliability floor and restored above it: its host is told each, signed', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const base = testConfig();
    const S = 1000;
    // Window 10 minutes, 5 minutes of history, floor 0.98, liveness grace 45 s (as reliability.test.ts). The manual
    // clock ends near the wall clock, where the deliveries are sent.
    const clock = new ManualClock(new Date(Date.now() - 1220 * S - 2000));
    const t = await createTestApp(dialect, {
      clock,
      configOverrides: {
        heartbeatIntervalMs: 15 * S,
        reliability: { floorE4: 9800, windowMs: 600 * S, minHistoryMs: 300 * S, intervalMs: 60 * S },
        webhooks: { ...base.webhooks, allowPrivate: true },
      },
    });
    try {
      const t0 = t.clock.now().getTime();
      const machine = await liveMachine(t.ctx, t.app);
      const hook = await subscribeWith(t, receiver, machine.host, ['machine.reliability_delisted', 'machine.reliability_restored']);
      /** Heartbeats every 40 s (inside the grace) from `fromS` through `toS`. */
      const beat = async (fromS: number, toS: number) => {
        for (let at = fromS; at <= toS; at += 40) {
          t.clock.set(new Date(t0 + at * S));
          await agentHeartbeat(t.ctx, machine.machineId);
          await t.ctx.services.hosting.heartbeats.flush();
        }
      };
      // Online 0..405 s (the last heartbeat at 360 s plus the grace) and at 540 s, out of 540 s: 0.7500, held.
      await beat(40, 360);
      await beat(540, 540);
      expect(await t.ctx.services.reliability.refresh()).toMatchObject({ held: 1, released: 0 });
      // At 1220 s the window (620..1220 s) is all online: released.
      await beat(580, 1220);
      expect(await t.ctx.services.reliability.refresh()).toMatchObject({ held: 0, released: 1 });

      const events = await deliveredTo(t, receiver, hook, machine.host.accountId);
      expect(events.map((e) => [e.type, e.data])).toEqual([
        ['machine.reliability_delisted', { machine_id: machine.machineId, score: '0.7500', floor: '0.9800', penalized_jobs: 0 }],
        ['machine.reliability_restored', { machine_id: machine.machineId, score: '1.0000', floor: '0.9800', penalized_jobs: 0 }],
      ]);
    } finally {
      await t.destroy();
      await receiver.close();
    }
  });

  it('a machine unlisted by a signed receipt showing fewer GPUs than declared, and relisted by one that agrees: told each, signed', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const base = testConfig();
    // The clock at the wall clock, where the deliveries are sent and verified.
    const t = await createTestApp(dialect, {
      clock: new ManualClock(new Date()),
      configOverrides: { webhooks: { ...base.webhooks, allowPrivate: true } },
    });
    try {
      const keys = machineKeyPair();
      const gpus = RECORDED_L4_GPUS.map((g) => ({ pci_address: g.pci_address, model: g.name, vram_bytes: String(g.vram_bytes) }));
      const machine = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus }), publicKey: keys.publicKey });
      const hook = await subscribeWith(t, receiver, machine.host, ['machine.unlisted', 'machine.relisted']);
      const receipt = (seq: number, found: typeof RECORDED_L4_GPUS) =>
        hardwareReceiptMessage(
          signHardwareReceipt(receiptBody(machine.machineId, seq, t.clock.now(), { gpus: found, benchmark: undefined }), keys.sign),
        );
      await deliverToAgent(t.ctx, machine.machineId, receipt(1, RECORDED_L4_GPUS.slice(0, 1)));
      await deliverToAgent(t.ctx, machine.machineId, receipt(2, RECORDED_L4_GPUS));
      const events = await deliveredTo(t, receiver, hook, machine.host.accountId);
      expect(events.map((e) => [e.type, e.data.machine_id, e.data.receipt_seq])).toEqual([
        ['machine.unlisted', machine.machineId, 1],
        ['machine.relisted', machine.machineId, 2],
      ]);
      expect(events[0]?.data.reasons).toEqual([
        { code: 'fewer_gpus', message: 'The machine declares 2 GPU(s) but the self-test found 1.' },
      ]);
    } finally {
      await t.destroy();
      await receiver.close();
    }
  });
});

// The money events on real parts (issue 22): anvil playing Base (TestUsdc at the Base USDC address), the real control
// plane (`ark-cp serve`) watching deposits, settling x402 top-ups and paying from its payout wallet, and delivering to
// the receiver in this test. Each type is emitted by the change it names, once per change: a deposit credited, an x402
// top-up credited, and every move of a withdrawal (held for review, approved, signed, broadcast, confirmed; another
// rejected) and of a host's payout.
describe.each(['sqlite', 'postgres'] as const)('money events on anvil on %s', (dialect) => {
  let anvil: Anvil;
  let chain: DepositChain;
  let database: TestDatabase | null = null;
  let cp: ControlPlane;
  let receiver: Receiver;
  let renter = '';
  let renterEmail = '';
  let host = '';
  let admin = '';
  let renterHook: { id: string; secret: string };
  let hostHook: { id: string; secret: string };
  let closeAgent = () => {};

  const subscribe = async (token: string, who: string, types: string[]) => {
    const created = await call(cp, 'POST', '/api/v1/webhooks', { token, body: { url: `${receiver.url}?for=${who}`, event_types: types } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body as { id: string; secret: string };
  };
  /** Accepted deliveries to `who`, verified with its endpoint's secret, in arrival order. */
  const eventsOf = (who: 'renter' | 'host') =>
    receiver
      .accepted()
      .filter((r) => r.url.endsWith(`?for=${who}`))
      .map((r) => ({ id: r.id, ...verifyDelivery(dialect, (who === 'renter' ? renterHook : hostHook).secret, r) }));
  const waitEvent = (who: 'renter' | 'host', description: string, match: (e: VerifiedEvent) => boolean) =>
    waitFor(() => eventsOf(who).find(match), { timeoutMs: 60_000, intervalMs: 100, description });
  /** One request's moves as told, each `from->to`, and the ids they came under. */
  const movesOf = (who: 'renter' | 'host', type: string, withdrawalId: string) => {
    const told = eventsOf(who).filter((e) => e.type === type && e.data.withdrawal_id === withdrawalId);
    return { moves: told.map((e) => `${e.data.from}->${e.data.to}`), ids: told.map((e) => e.id), told };
  };

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    anvil = await startAnvil();
    chain = await setupDepositChain(anvil);
    const x402 = await x402Setup(chain, anvil);
    const wallet = await fundedPayoutWallet(chain, anvil, 100n * USDC);
    if (dialect === 'postgres') database = await createTestDatabase();
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: {
        ...x402.env,
        ARK_DEPOSIT_XPUB: randomDepositXpub(),
        ARK_BALANCE_CAP_MICRO: '0',
        ARK_WEBHOOK_ALLOW_PRIVATE: 'true',
        ARK_WEBHOOK_POLL_INTERVAL_MS: '50',
        ARK_WEBHOOK_TIMEOUT_S: '2',
        ARK_PAYOUT_KEY_FILE: wallet.keyFile,
        ARK_PAYOUT_POLL_INTERVAL_MS: '100',
        ARK_WITHDRAWAL_REVIEW_ABOVE_MICRO: String(1_500_000n),
        ARK_WITHDRAWAL_NEW_ADDRESS_HOLD_S: '0',
        ARK_WITHDRAWAL_REVIEW_FIRST: '0',
        // Earnings payable at once: maturity is test/e2e/payouts.test.ts's subject; here the payout's moves are.
        ARK_EARNINGS_MATURITY_S: '0',
        ARK_HEARTBEAT_INTERVAL_S: '1',
        ARK_METER_INTERVAL_S: '1',
        // 3600 USDC an hour: one USDC a second of metered time.
        ARK_SEED_RATE_MICRO_PER_HOUR: String(3_600n * USDC),
        ARK_SPEND_RATE_CAP_MICRO_PER_HOUR: '1000000000000000',
      },
    });
    const tag = randomTag();
    renterEmail = `renter-${tag}@example.test`;
    const adminEmail = `admin-${tag}@example.test`;
    renter = await steppedUpSession(cp, 'renter', renterEmail);
    host = await steppedUpSession(cp, 'host', `host-${tag}@example.test`);
    await controlPlaneCli(cp, ['accounts', 'create', '--email', adminEmail, '--role', 'admin', '--password', PASSWORD, '--verified']);
    admin = await adminSession(cp, adminEmail);
    renterHook = await subscribe(renter, 'renter', ['deposit.credited', 'topup.credited', 'withdrawal.state_changed']);
    hostHook = await subscribe(host, 'host', ['payout.state_changed']);
  }, 300_000);

  afterAll(async () => {
    closeAgent();
    await cp?.process.stop('SIGKILL');
    await anvil?.stop();
    await receiver?.close();
    await database?.drop();
  });

  it('a deposit and an x402 top-up are each told once, when credited', { timeout: 120_000 }, async () => {
    const address = await call(cp, 'GET', '/api/v1/billing/deposit-address', { token: renter });
    expect(address.status, JSON.stringify(address.body)).toBe(200);
    const depositTx = await chain.sendUsdc(address.body.address, 5n * USDC);
    await anvil.mine(2);
    const deposit = await waitEvent('renter', 'deposit.credited', (e) => e.type === 'deposit.credited');
    expect(deposit.data).toMatchObject({ network: 'base', asset: 'USDC', tx_hash: depositTx, credited_micro: String(5n * USDC) });

    // A stranger's wallet pays with the official x402 client, as in x402.test.ts.
    const payer = privateKeyToAccount(generatePrivateKey());
    await chain.sendUsdc(payer.address, 10n * USDC);
    const client = new x402Client();
    client.register('eip155:8453', new ExactEvmScheme(payer));
    client.setSpendControls({ maxAmountPerPayment: '$20' });
    const pay = wrapFetchWithPayment(fetch, client);
    const paid = await pay(`${cp.base}/api/v1/billing/x402/top-up?amount_micro=${3n * USDC}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${renter}` },
    });
    const result = (await paid.json()) as { intent_id: string; tx_hash: string };
    expect(paid.status, JSON.stringify(result)).toBe(200);
    // Not told before the settlement is final; told once the worker credits it.
    expect(eventsOf('renter').some((e) => e.type === 'topup.credited')).toBe(false);
    await anvil.mine(2);
    const topUp = await waitEvent('renter', 'topup.credited', (e) => e.type === 'topup.credited');
    expect(topUp.data).toEqual({
      intent_id: result.intent_id,
      network: 'base',
      payer: payer.address,
      tx_hash: result.tx_hash,
      credited_micro: String(3n * USDC),
    });
    const balance = await call(cp, 'GET', '/api/v1/billing/balance', { token: renter });
    expect(balance.body.available_micro).toBe(String(8n * USDC));
    // Once each, under one id each, whatever the workers did since.
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const credited = eventsOf('renter').filter((e) => e.type === 'deposit.credited' || e.type === 'topup.credited');
    expect(credited.map((e) => e.type).sort()).toEqual(['deposit.credited', 'topup.credited']);
  });

  it('every move of a withdrawal is told once: held, approved, signed, broadcast, confirmed; and a rejection', {
    timeout: 180_000,
  }, async () => {
    const addressId = await addWithdrawalAddress(cp, renter, randomAddress());
    const withdraw = (amount: bigint) =>
      call(cp, 'POST', '/api/v1/withdrawals', {
        token: renter,
        body: { amount_micro: amount.toString(), withdrawal_address_id: addressId },
      });
    const review = async (id: string, decision: 'approve' | 'reject') => {
      const answer = await call(cp, 'POST', `/api/v1/admin/withdrawals/${id}/review`, {
        token: admin,
        body: { decision, reason: 'reviewed by the e2e test' },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    };
    // Over the review threshold (1.5 USDC): held UNSIGNED until an admin approves it.
    const requested = await withdraw(4n * USDC);
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    const id = requested.body.id as string;
    await waitWithdrawal(cp, anvil, renter, id, 'UNSIGNED');
    await review(id, 'approve');
    const confirmed = await waitWithdrawal(cp, anvil, renter, id, 'CONFIRMED');
    const expected = [
      'null->INTENT',
      'INTENT->UNSIGNED',
      'UNSIGNED->INTENT',
      'INTENT->SIGNED',
      'SIGNED->BROADCAST',
      'BROADCAST->CONFIRMED',
    ];
    await waitFor(() => movesOf('renter', 'withdrawal.state_changed', id).moves.length >= expected.length, {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'every move of the withdrawal told',
    });
    const told = movesOf('renter', 'withdrawal.state_changed', id);
    expect(told.moves).toEqual(expected);
    expect(new Set(told.ids).size).toBe(expected.length);
    for (const event of told.told)
      expect(event.data).toMatchObject({ withdrawal_id: id, kind: 'withdrawal', amount_micro: String(4n * USDC) });
    expect(told.told.map((e) => e.data.tx_hash)).toEqual([null, null, null, confirmed.tx_hash, confirmed.tx_hash, confirmed.tx_hash]);

    // Another one held and rejected: FAILED, its lock back.
    const second = await withdraw(2n * USDC);
    expect(second.status, JSON.stringify(second.body)).toBe(202);
    const secondId = second.body.id as string;
    await waitWithdrawal(cp, anvil, renter, secondId, 'UNSIGNED');
    await review(secondId, 'reject');
    await waitFor(() => movesOf('renter', 'withdrawal.state_changed', secondId).moves.length >= 3, {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the rejection told',
    });
    expect(movesOf('renter', 'withdrawal.state_changed', secondId).moves).toEqual(['null->INTENT', 'INTENT->UNSIGNED', 'UNSIGNED->FAILED']);
  });

  it("every move of a host's payout is told to the host once", { timeout: 180_000 }, async () => {
    // The renter funds the job the host earns from (its budget defaults to the whole estimate: 600 USDC).
    await controlPlaneCli(cp, ['ledger', 'credit', '--email', renterEmail, '--amount-micro', String(1_000n * USDC), '--reason', 'e2e']);
    const earned = await hostEarns(cp, { hostToken: host, renterToken: renter, runtimeMs: 3_000 });
    closeAgent = () => earned.agent.close();
    const addressId = await addWithdrawalAddress(cp, host, randomAddress());
    const requested = await call(cp, 'POST', '/api/v1/withdrawals', {
      token: host,
      body: { amount_micro: String(USDC), withdrawal_address_id: addressId },
    });
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    expect(requested.body.kind).toBe('payout');
    const id = requested.body.id as string;
    const confirmed = await waitWithdrawal(cp, anvil, host, id, 'CONFIRMED');
    const expected = ['null->INTENT', 'INTENT->SIGNED', 'SIGNED->BROADCAST', 'BROADCAST->CONFIRMED'];
    await waitFor(() => movesOf('host', 'payout.state_changed', id).moves.length >= expected.length, {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'every move of the payout told',
    });
    const told = movesOf('host', 'payout.state_changed', id);
    expect(told.moves).toEqual(expected);
    expect(new Set(told.ids).size).toBe(expected.length);
    expect(told.told.at(-1)?.data).toEqual({
      withdrawal_id: id,
      kind: 'payout',
      from: 'BROADCAST',
      to: 'CONFIRMED',
      amount_micro: String(USDC),
      tx_hash: confirmed.tx_hash,
    });
    // The renter's endpoint did not subscribe to payouts and got none.
    expect(eventsOf('renter').some((e) => e.type === 'payout.state_changed')).toBe(false);
  });
});

// Issue 22: a type that is listed is emitted. Every type an endpoint may subscribe to was received and verified above.
describe.each(['sqlite', 'postgres'] as const)('every listed event type on %s', (dialect) => {
  it('was delivered to a real receiver and verified with standardwebhooks', () => {
    expect([...verifiedTypes[dialect]].sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
  });
});
