import { randomUUID } from 'node:crypto';
import { Machine, OfferListItem, OfferSummary } from '@ark/shared';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp, testConfig } from '../../testing/app.js';
import {
  agentHeartbeat,
  customImage,
  deliver,
  fund,
  jobStatus,
  type LiveMachine,
  liveMachine,
  postJob,
  postQuote,
  reserveJob,
  sshPublicKey,
} from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

// Machine reliability through the real app: heartbeats through the channel's handler (the first applied at once, the
// rest through the write-behind buffer's flush), offers committed over HTTP, the reliability worker's step, and what
// renters and hosts read. Window 10 minutes, 5 minutes of history, floor 0.98, liveness grace 45 s (3 x 15 s).

type Json = Record<string, any>;
const summarySchema = TypeCompiler.Compile(OfferSummary);
const listItemSchema = TypeCompiler.Compile(OfferListItem);
const machineSchema = TypeCompiler.Compile(Machine);
const S = 1000;

describe.each(DIALECTS)('machine reliability on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let renter: SeededAccount;
  let a: LiveMachine; // falls silent with nothing announced
  let b: LiveMachine; // falls silent inside its published maintenance window
  let t0: number;

  const at = (offsetS: number) => new Date(t0 + offsetS * S);
  const advanceTo = (offsetS: number) => t.clock.set(at(offsetS));
  const beat = async (...machines: LiveMachine[]) => {
    for (const m of machines) await agentHeartbeat(t.ctx, m.machineId);
    await t.ctx.services.hosting.heartbeats.flush();
  };
  /** Heartbeats every 40 s (inside the 45 s grace) from `fromS` through `toS` for the given machines. */
  const beatEvery40s = async (fromS: number, toS: number, ...machines: LiveMachine[]) => {
    for (let s = fromS; s <= toS; s += 40) {
      advanceTo(s);
      await beat(...machines);
    }
  };
  /** The listing as a renter reads it: each item exactly the contract's OfferSummary unless it asked for more. */
  const offers = async (query = '') => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/offers${query}`, headers: bearer(renter.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    const schema = query.includes('include=reliability') ? listItemSchema : summarySchema;
    for (const item of res.json().items) expect(schema.Check(item), JSON.stringify(item)).toBe(true);
    return res.json().items as Json[];
  };
  /** The machine's offer with its reliability, asked for explicitly. */
  const offerOf = async (m: LiveMachine) => (await offers('?include=reliability')).find((o) => o.machine_id === m.machineId);
  const machineView = async (m: LiveMachine) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${m.machineId}`, headers: bearer(m.host.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    expect(machineSchema.Check(res.json()), res.body).toBe(true);
    return res.json() as Json;
  };
  const quote = (m: LiveMachine) =>
    postQuote(t.app, renter, { offer_id: m.offerId, gpu_count: 1, duration_limit_s: 600, image_digest: customImage() });
  const subscribe = async (host: SeededAccount) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: { ...bearer(host.apiKey), 'idempotency-key': randomUUID() },
      payload: { url: 'http://127.0.0.1:9/hooks', event_types: ['machine.reliability_delisted', 'machine.reliability_restored'] },
    });
    expect(res.statusCode, res.body).toBe(201);
  };
  const events = async (host: SeededAccount) =>
    (
      await t.store.db
        .selectFrom('webhook_events')
        .select(['type', 'payload'])
        .where('account_id', '=', host.accountId)
        .where('type', 'in', ['machine.reliability_delisted', 'machine.reliability_restored'])
        .orderBy('created_at')
        .execute()
    ).map((e) => ({ type: e.type, data: JSON.parse(e.payload).data }));

  beforeAll(async () => {
    const base = testConfig();
    t = await createTestApp(dialect, {
      configOverrides: {
        heartbeatIntervalMs: 15 * S,
        reliability: { floorE4: 9800, windowMs: 600 * S, minHistoryMs: 300 * S, intervalMs: 60 * S },
        webhooks: { ...base.webhooks, allowPrivate: true },
      },
    });
    renter = await seedAccount(t.ctx, { scopes: ['renter'] });
    await fund(t.ctx, renter.accountId, 100_000_000n);
    t0 = t.clock.now().getTime();
    a = await liveMachine(t.ctx, t.app);
    b = await liveMachine(t.ctx, t.app);
    await subscribe(a.host);
    await subscribe(b.host);
    // B announces maintenance from 6 to 10 minutes in (a new offer version committed now, before it begins).
    const committed = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${b.machineId}/offer`,
      headers: { ...bearer(b.host.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        rate_micro_per_hour: '500000',
        included_quotas: { included_disk_gib: 100, included_egress_gib: 50 },
        available_from: at(0).toISOString(),
        available_until: at(30 * 86400).toISOString(),
        maintenance_windows: [{ starts_at: at(360).toISOString(), ends_at: at(600).toISOString(), reason: 'kernel upgrade' }],
        expected_version: '1',
      },
    });
    expect(committed.statusCode, committed.body).toBe(202);
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('scores a machine that beat all along 1.0000, one interval per run of heartbeats, and lists it', async () => {
    await beatEvery40s(40, 360, a, b);
    await t.ctx.services.reliability.refresh();
    const intervals = await t.store.db
      .selectFrom('machine_online_intervals')
      .select(['started_at', 'ended_at'])
      .where('machine_id', '=', a.machineId)
      .execute();
    expect(intervals).toEqual([{ started_at: at(0).toISOString(), ended_at: at(360).toISOString() }]);
    const view = await machineView(a);
    expect(view.reliability).toEqual({
      score: '1.0000',
      new: false,
      window_from: at(0).toISOString(),
      counted_s: '360',
      online_s: '360',
      penalized_jobs: 0,
      computed_at: at(360).toISOString(),
    });
    expect(view.reliability_hold).toBeNull();
    expect((await offerOf(a))?.reliability).toEqual({ score: '1.0000', new: false });
  });

  it('keeps each listed offer exactly the contract’s closed OfferSummary: reliability only when asked for (issue 22)', async () => {
    await t.ctx.services.reliability.refresh();
    const plain = await offers();
    expect(plain.length).toBeGreaterThan(0);
    for (const item of plain) expect(item).not.toHaveProperty('reliability');
    const asked = await offers('?include=reliability');
    expect(asked.map((o) => o.machine_id)).toEqual(plain.map((o) => o.machine_id));
    expect(asked.some((o) => o.reliability !== undefined)).toBe(true);
    for (const [i, item] of asked.entries()) {
      const { reliability: _, ...rest } = item;
      expect(rest).toEqual({ ...plain[i], observed_at: rest.observed_at });
    }
    const bad = await t.app.inject({ method: 'GET', url: '/api/v1/offers?include=secrets', headers: bearer(renter.apiKey) });
    expect(bad.statusCode).toBe(422);
  });

  it('a machine silent past the floor is hidden from offers, refused a quote and a reservation, and its host is told why', async () => {
    // Both machines fall silent after 360 s; at 540 s A comes back, and a renter quotes it before the worker runs.
    advanceTo(540);
    await beat(a);
    const early = await quote(a);
    expect(early.statusCode, early.body).toBe(201);
    const step = await t.ctx.services.reliability.refresh();
    expect(step).toMatchObject({ held: 1, released: 0 });

    // Online 0..405 s (the last heartbeat at 360 s plus the 45 s grace) and at 540 s, out of 540 s: 0.7500.
    const view = await machineView(a);
    expect(view.reliability).toMatchObject({ score: '0.7500', new: false, counted_s: '540', online_s: '405' });
    expect(view.reliability_hold).toMatchObject({
      reason: 'below_reliability_floor',
      score: '0.7500',
      floor: '0.9800',
      since: at(540).toISOString(),
    });
    expect(view.reliability_hold.message).toContain('under the floor 0.9800');
    expect(view.liveness).toBe('online');
    expect(await offerOf(a)).toBeUndefined();
    const refused = await quote(a);
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().error.code).toBe('OFFER_NOT_CURRENT');
    const reserved = await postJob(t.app, renter, { quote_id: early.json().quote_id, ssh_public_keys: [sshPublicKey()] });
    expect(reserved.json().error?.code, reserved.body).toBe('MACHINE_NOT_AVAILABLE');
    expect(await events(a.host)).toEqual([
      { type: 'machine.reliability_delisted', data: { machine_id: a.machineId, score: '0.7500', floor: '0.9800', penalized_jobs: 0 } },
    ]);
  });

  it('the same silence inside a published maintenance window does not lower the score', async () => {
    // B was silent from 360 s to 540 s too, inside its window (360..600): counted 0..360 s, all online.
    const view = await machineView(b);
    expect(view.reliability).toMatchObject({ score: '1.0000', new: false, counted_s: '360', online_s: '360' });
    expect(view.reliability_hold).toBeNull();
    expect((await offerOf(b))?.reliability).toEqual({ score: '1.0000', new: false });
    expect(await events(b.host)).toEqual([]);
  });

  it('renters filter by min_reliability: new machines and held ones never match; out of range is 422', async () => {
    const young = await liveMachine(t.ctx, t.app);
    await t.ctx.services.reliability.refresh();
    // A machine enrolled just now is new: shown (with a provisional score), never held.
    expect((await offerOf(young))?.reliability).toEqual({ score: '1.0000', new: true });
    const strict = (await offers('?min_reliability=0.99')).map((o) => o.machine_id);
    expect(strict).toContain(b.machineId);
    expect(strict).not.toContain(young.machineId);
    expect(strict).not.toContain(a.machineId);
    expect((await offers('?min_reliability=1')).map((o) => o.machine_id)).toContain(b.machineId);
    for (const bad of ['1.5', '1.00001', '-0.1', 'x', '0.98765']) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/offers?min_reliability=${bad}`, headers: bearer(renter.apiKey) });
      expect(res.statusCode, `${bad}: ${res.body}`).toBe(422);
      expect(res.json().error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('heartbeats resume and time passes: the machine is listed again and its host is told', async () => {
    // At 1020 s the silence is still in the window (420..1020 s: online 540..1020, 480 of 600 s): held.
    await beatEvery40s(580, 1020, a, b);
    await t.ctx.services.reliability.refresh();
    expect((await machineView(a)).reliability.score).toBe('0.8000');
    expect(await offerOf(a)).toBeUndefined();
    // At 1220 s the window is 620..1220 s, all online: released.
    await beatEvery40s(1060, 1220, a, b);
    const step = await t.ctx.services.reliability.refresh();
    expect(step).toMatchObject({ held: 0, released: 1 });
    const view = await machineView(a);
    expect(view.reliability).toMatchObject({ score: '1.0000', window_from: at(620).toISOString() });
    expect(view.reliability_hold).toBeNull();
    expect((await offerOf(a))?.reliability).toEqual({ score: '1.0000', new: false });
    const again = await quote(a);
    expect(again.statusCode, again.body).toBe(201);
    expect((await events(a.host)).map((e) => e.type)).toEqual(['machine.reliability_delisted', 'machine.reliability_restored']);
    expect((await events(a.host))[1]?.data).toEqual({ machine_id: a.machineId, score: '1.0000', floor: '0.9800', penalized_jobs: 0 });
    // The run that ended at 360 s is older than the window and its grace (1220 - 600 - 45 s): pruned.
    const intervals = await t.store.db
      .selectFrom('machine_online_intervals')
      .select(['started_at', 'ended_at'])
      .where('machine_id', '=', a.machineId)
      .execute();
    expect(intervals).toEqual([{ started_at: at(540).toISOString(), ended_at: at(1220).toISOString() }]);
  });

  it('each job that failed to start costs 0.02: at the floor the machine stays offered, under it it is held', async () => {
    const failJob = async () => {
      const { jobId } = await reserveJob(t.app, renter, b);
      await deliver(t.ctx, b.machineId, jobStatus(jobId, 1, 'failed', t.clock.now(), { detail: 'image pull failed' }));
      const job = await t.store.db.selectFrom('jobs').select(['state', 'close_reason']).where('id', '=', jobId).executeTakeFirstOrThrow();
      expect(job).toEqual({ state: 'FAILED', close_reason: 'launch_failed' });
    };
    await failJob();
    await t.ctx.services.reliability.refresh();
    expect((await machineView(b)).reliability).toMatchObject({ score: '0.9800', penalized_jobs: 1 });
    expect((await machineView(b)).reliability_hold).toBeNull();
    expect((await offerOf(b))?.reliability).toEqual({ score: '0.9800', new: false });
    await failJob();
    await t.ctx.services.reliability.refresh();
    const view = await machineView(b);
    expect(view.reliability).toMatchObject({ score: '0.9600', penalized_jobs: 2 });
    expect(view.reliability_hold).toMatchObject({ reason: 'below_reliability_floor', score: '0.9600' });
    expect(await offerOf(b)).toBeUndefined();
    expect(await events(b.host)).toEqual([
      { type: 'machine.reliability_delisted', data: { machine_id: b.machineId, score: '0.9600', floor: '0.9800', penalized_jobs: 2 } },
    ]);
  });
});
