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
import { bearer, createTestApp, type SeededAccount, seedAccount, testConfig } from '@ark/control-plane/testing/app';
import { fund, liveMachine, meterReceipt, deliver as deliverToAgent, reserveJob, runJob } from '@ark/control-plane/testing/renting';
import { httpWebhookSender } from '@ark/control-plane/workers/webhooks';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { waitFor } from '../harness/processes.js';
import { api, type ControlPlane, controlPlaneCli, startControlPlane } from './host-side-helpers.js';

const PASSWORD = 'correct horse battery staple';

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
    for (const attempt of attempts) expect(verifier.verify(attempt.body, headersOf(attempt))).toEqual(JSON.parse(attempt.body));
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
    const verifier = new Webhook(endpoint.secret);
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
      expect(verifier.verify(r.body, headersOf(r))).toBeTruthy();
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
      const subscribe = async (who: SeededAccount, types: string[]) => {
        const answer = await t.app.inject({
          method: 'POST',
          url: '/api/v1/webhooks',
          headers: { ...bearer(who.apiKey), 'idempotency-key': randomUUID() },
          payload: { url: `${receiver.url}?for=${who.accountId}`, event_types: types },
        });
        expect(answer.statusCode, answer.body).toBe(201);
        return answer.json() as { id: string; secret: string };
      };
      const renterHook = await subscribe(renter, ['job.state_changed', 'job.budget_threshold']);
      const hostHook = await subscribe(machine.host, ['machine.online', 'machine.offline', 'job.state_changed']);

      expect(await t.ctx.services.webhooks.tellLivenessChanges()).toBe(1);
      expect(await t.ctx.services.webhooks.tellLivenessChanges()).toBe(0);
      const { jobId } = await reserveJob(t.app, renter, machine);
      const ready = await runJob(t, machine.machineId, jobId);
      // 60 % of the hour, then 90 %: the charges cross 50 % and then 80 % of the budget.
      t.clock.advance((METERED_MS * 2) / 3);
      await deliverToAgent(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, ready, t.clock.now()));
      const mid = t.clock.now();
      t.clock.advance(METERED_MS / 3);
      await deliverToAgent(t.ctx, machine.machineId, meterReceipt(jobId, 1, 2, mid, t.clock.now()));
      // The agent falls silent past three heartbeat intervals.
      expect(await t.ctx.services.webhooks.tellLivenessChanges()).toBe(1);

      for (let round = 0; round < 50; round++) {
        const step = await t.ctx.services.webhooks.deliverDue(httpWebhookSender);
        if (step.attempted === 0) break;
      }
      // Each endpoint's deliveries, in the order they arrived, verified with its own secret.
      const bodies = (secret: string, accountId: string) =>
        receiver.requests
          .filter((r) => r.status === 200 && r.url.endsWith(`?for=${accountId}`))
          .map((r) => new Webhook(secret).verify(r.body, headersOf(r)) as { type: string; data: any });
      const renterEvents = bodies(renterHook.secret, renter.accountId);
      const hostEvents = bodies(hostHook.secret, machine.host.accountId);

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
});
