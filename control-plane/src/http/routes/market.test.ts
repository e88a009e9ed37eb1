import { randomUUID } from 'node:crypto';
import { MarketResponse } from '@ark/shared';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { enrollDirect, sampleManifest } from '../../testing/hosting.js';
import { agentHeartbeat, fund, type LiveMachine, liveMachine, reserveJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';
import { blendedPercentile, coarseRate } from '../../domain/market/stats.js';

// Host market statistics over a fleet brought in through the public API (enrollment, heartbeats through the
// gateway's handler, offer commits, quotes and reservations): every figure against a hand computation.

type Json = Record<string, any>;
const responseSchema = TypeCompiler.Compile(MarketResponse);
const RTX = 'NVIDIA GeForce RTX 4090';
const H100 = 'NVIDIA H100 80GB HBM3';
const A6000 = 'NVIDIA RTX A6000';
const DAY = 86_400_000;
const NULLS = {
  listed_gpus: null,
  allocated_gpus: null,
  utilization_pct: null,
  fill_rate_pct: null,
  rental_sample_size: null,
  rate_micro: null,
  median_time_to_first_rental_s: null,
  your_rate_micro: null,
};

const manifestOf = (model: string, gpus: number) =>
  sampleManifest({
    gpus: Array.from({ length: gpus }, (_, i) => ({ pci_address: `00000000:0${i + 1}:00.0`, model, vram_bytes: '25757220864' })),
  });

describe.each(DIALECTS)('host market on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let me: SeededAccount;
  let renter: SeededAccount;
  let rendered: string;
  let answer: Json;
  const others: LiveMachine[] = [];
  const ids: string[] = [];
  const othersRates: string[] = [];
  let myMachine: string;
  const jobIds: string[] = [];
  let snapshotAt: Date;

  const commit = async (host: SeededAccount, machineId: string, rate: string) => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${machineId}/offer`,
      headers: { ...bearer(host.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        rate_micro_per_hour: rate,
        included_quotas: { included_disk_gib: 100, included_egress_gib: 50 },
        available_from: t.clock.now().toISOString(),
        available_until: new Date(t.clock.now().getTime() + 30 * DAY).toISOString(),
        expected_version: '1',
      },
    });
    expect(res.statusCode, res.body).toBe(202);
    ids.push(res.json().offer_id);
  };
  const market = (query: string, token = me.apiKey) =>
    t.app.inject({ method: 'GET', url: `/api/v1/hosts/market${query}`, headers: bearer(token) });

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { marketMinSampleSize: 3, seedRateMicroPerHour: 500_000n } });
    me = await seedAccount(t.ctx, { role: 'host', scopes: ['host'] });
    renter = await seedAccount(t.ctx, { scopes: ['renter'] });
    await fund(t.ctx, renter.accountId, 100_000_000n);
    ids.push(me.accountId, renter.accountId);

    // RTX 4090, two GPUs each: four other hosts and mine, all listed now (t0).
    const rtxRates = ['1000000', '1210000', '1470000', '2030000'];
    for (const rate of rtxRates) {
      const m = await liveMachine(t.ctx, t.app, { manifest: manifestOf(RTX, 2) });
      others.push(m);
      ids.push(m.machineId, m.host.accountId);
      await commit(m.host, m.machineId, rate);
      othersRates.push(rate);
    }
    myMachine = await enrollDirect(t.app, me, { manifest: manifestOf(RTX, 2) });
    await agentHeartbeat(t.ctx, myMachine);
    await commit(me, myMachine, '1130000');
    ids.push(myMachine);
    // H100: two machines, under the minimum of three.
    for (const rate of ['3330000', '3770000']) {
      const m = await liveMachine(t.ctx, t.app, { manifest: manifestOf(H100, 1) });
      ids.push(m.machineId, m.host.accountId);
      await commit(m.host, m.machineId, rate);
      othersRates.push(rate);
    }
    // One A6000: a bucket of one machine.
    const lone = await liveMachine(t.ctx, t.app, { manifest: manifestOf(A6000, 4) });
    ids.push(lone.machineId, lone.host.accountId);
    await commit(lone.host, lone.machineId, '2490000');
    othersRates.push('2490000');

    // First rentals 10, 20 and 40 minutes after listing, one GPU each, on three of the others' RTX machines.
    const offsets = [600_000, 600_000, 1_200_000];
    for (const [i, step] of offsets.entries()) {
      await t.clock.advance(step);
      await agentHeartbeat(t.ctx, (others[i] as LiveMachine).machineId);
      const { jobId } = await reserveJob(t.app, renter, others[i] as LiveMachine);
      jobIds.push(jobId);
    }
    ids.push(...jobIds);
    await t.clock.advance(60_000);
    snapshotAt = t.clock.now();
    // The worker's step (market-stats): the request below only reads what it stored.
    expect(await t.ctx.services.market.refresh()).toBeGreaterThan(0);
    await t.clock.advance(60_000);
    const res = await market('?window=30d');
    expect(res.statusCode, res.body).toBe(200);
    rendered = res.body;
    answer = res.json();
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('answers the contract shape over [to - window, to), to being the snapshot', () => {
    expect(responseSchema.Check(answer), JSON.stringify([...responseSchema.Errors(answer)])).toBe(true);
    expect(answer.window_days).toBe(30);
    expect(answer.to).toBe(snapshotAt.toISOString());
    expect(answer.from).toBe(new Date(snapshotAt.getTime() - 30 * DAY).toISOString());
    expect(answer.min_sample_size).toBe(3);
    expect(answer.models.map((m: Json) => m.gpu_model)).toEqual([H100, RTX, A6000].sort());
  });

  it('reports every RTX figure as computed by hand', () => {
    // Rates sorted: 1000000 1130000 1210000 1470000 2030000, on the E24 grid 1.0 1.1 1.2 1.5 2.0 (millions); each
    // percentile is the floored mean of the three around its nearest rank, put on the grid again: p10 (1.0+1.1+1.2)/3
    // = 1.1, median (1.1+1.2+1.5)/3 = 1.267 -> 1.3, p90 (1.2+1.5+2.0)/3 = 1.567 -> 1.6. Ten GPUs listed, three held;
    // three of five machines rented; first rentals 600, 1200 and 2400 s after listing.
    expect(answer.models.find((m: Json) => m.gpu_model === RTX)).toEqual({
      gpu_model: RTX,
      sample_size: 5,
      listed_gpus: 10,
      allocated_gpus: 3,
      utilization_pct: 30,
      fill_rate_pct: 60,
      rental_sample_size: 3,
      rate_micro: { p10_micro: '1100000', median_micro: '1300000', p90_micro: '1600000' },
      median_time_to_first_rental_s: '1200',
      your_rate_micro: '1130000',
    });
  });

  it('reports only the sample size of buckets under the minimum', () => {
    expect(answer.models.find((m: Json) => m.gpu_model === H100)).toEqual({ gpu_model: H100, sample_size: 2, ...NULLS });
    expect(answer.models.find((m: Json) => m.gpu_model === A6000)).toEqual({ gpu_model: A6000, sample_size: 1, ...NULLS });
  });

  it('never returns an identifier or another host’s rate, whatever the window or model', async () => {
    const answers = [rendered];
    for (const query of [
      '?window=1d',
      '?window=365d',
      `?window=1d&gpu_model=${encodeURIComponent(A6000)}`,
      `?gpu_model=${encodeURIComponent(RTX)}`,
    ]) {
      const res = await market(query);
      expect(res.statusCode, res.body).toBe(200);
      answers.push(res.body);
    }
    const lone = JSON.parse(answers[3] as string);
    expect(lone.models).toEqual([expect.objectContaining({ gpu_model: A6000, sample_size: 1, rate_micro: null })]);
    for (const body of answers) {
      for (const id of ids) expect(body).not.toContain(id);
      for (const rate of [...othersRates, '500000']) expect(body).not.toContain(rate);
    }
  });

  it('filters by an exact model; an unknown model is an empty bucket', async () => {
    const one = (await market(`?window=7d&gpu_model=${encodeURIComponent(RTX)}`)).json();
    expect(one.models).toHaveLength(1);
    expect(one.models[0]).toMatchObject({ gpu_model: RTX, sample_size: 5, rate_micro: { median_micro: '1300000' } });
    const none = (await market('?gpu_model=NVIDIA%20B200')).json();
    expect(none.models).toEqual([{ gpu_model: 'NVIDIA B200', sample_size: 0, ...NULLS }]);
  });

  it('shows a host without machines no rate of its own; refuses a renter key, no credential and bad windows', async () => {
    const stranger = await seedAccount(t.ctx, { role: 'host', scopes: ['host'] });
    const theirs = (await market(`?gpu_model=${encodeURIComponent(RTX)}`, stranger.apiKey)).json();
    expect(theirs.models[0].your_rate_micro).toBeNull();
    expect(theirs.models[0].rate_micro).toEqual(answer.models.find((m: Json) => m.gpu_model === RTX).rate_micro);
    expect((await market('', renter.apiKey)).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/hosts/market' })).statusCode).toBe(401);
    for (const bad of ['0d', '366d', '30', '12h', 'abc', '1.5d', '-3d']) {
      const res = await market(`?window=${encodeURIComponent(bad)}`);
      expect(res.statusCode, bad).toBe(422);
      expect(res.json().error.code).toBe('VALIDATION_FAILED');
    }
  });
});

// The differencing attack of issue 22: a host with one cheap machine in a small bucket reads the market before and
// after a newcomer lists above everyone. With each percentile the mean of three exact rates, the old median is the
// mean of the three old rates and the new p90 the mean of the three highest, so own + 3 x (new p90 - old median) was
// the newcomer's rate to the micro. The figures are now computed from each rate's E24 step and published on the grid
// (domain/market/README.md): the attack finds a step, not the rate, and no other attack can find more, since rates
// moved within their steps (the newcomer's, or the reader's own as a probe) leave every figure as it was.
describe.each(DIALECTS)('the differencing attack on the host market on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let attacker: SeededAccount;
  let attackerMachine: string;
  const OWN = 1_000_000n;
  // The two rates already listed, and the newcomer's, none on a round figure.
  const OTHERS = [1_500_000n, 2_000_000n];
  const NEWCOMER = 2_345_677n;

  const commit = async (host: SeededAccount, machineId: string, rate: bigint, version: string) => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${machineId}/offer`,
      headers: { ...bearer(host.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        rate_micro_per_hour: String(rate),
        included_quotas: { included_disk_gib: 100, included_egress_gib: 50 },
        available_from: t.clock.now().toISOString(),
        available_until: new Date(t.clock.now().getTime() + 30 * DAY).toISOString(),
        expected_version: version,
      },
    });
    expect(res.statusCode, res.body).toBe(202);
  };
  /** The worker's refresh a minute on, then the RTX bucket as the attacker reads it. */
  const snapshot = async () => {
    await t.clock.advance(60_000);
    await t.ctx.services.market.refresh();
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/v1/hosts/market?window=1d&gpu_model=${encodeURIComponent(RTX)}`,
      headers: bearer(attacker.apiKey),
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().models[0] as Json;
  };
  const attack = (before: Json, after: Json) => OWN + 3n * (BigInt(after.rate_micro.p90_micro) - BigInt(before.rate_micro.median_micro));

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { marketMinSampleSize: 3 } });
    attacker = await seedAccount(t.ctx, { role: 'host' });
    attackerMachine = await enrollDirect(t.app, attacker, { manifest: manifestOf(RTX, 1) });
    await agentHeartbeat(t.ctx, attackerMachine);
    await commit(attacker, attackerMachine, OWN, '1');
    for (const rate of OTHERS) {
      const m = await liveMachine(t.ctx, t.app, { manifest: manifestOf(RTX, 1) });
      await commit(m.host, m.machineId, rate, '1');
    }
  });
  afterAll(async () => {
    await t?.destroy();
  });

  it('no longer recovers a newcomer’s rate from two snapshots around its arrival, as it did from the exact figures', async () => {
    const before = await snapshot();
    expect(before.sample_size).toBe(3);
    const newcomer = await liveMachine(t.ctx, t.app, { manifest: manifestOf(RTX, 1) });
    await commit(newcomer.host, newcomer.machineId, NEWCOMER, '1');
    const after = await snapshot();
    expect(after.sample_size).toBe(4);

    // The attack on the figures as they were published (the blend of exact rates) finds the newcomer to the micro.
    const exact = [OWN, ...OTHERS];
    const exactBefore = { rate_micro: { median_micro: String(blendedPercentile(exact, 50)) } };
    const exactAfter = { rate_micro: { p90_micro: String(blendedPercentile([...exact, NEWCOMER], 90)) } };
    expect(attack(exactBefore, exactAfter)).toBe(NEWCOMER);
    // On what is published now it finds another figure.
    const found = attack(before, after);
    expect(found).not.toBe(NEWCOMER);
    for (const figure of Object.values<string>(after.rate_micro))
      expect(BigInt(figure), 'a figure on the E24 grid').toBe(coarseRate(BigInt(figure)));

    // Nothing tells the newcomer's rate from another in its step (2.4 million): the figures stay the same.
    await commit(newcomer.host, newcomer.machineId, 2_310_000n, '2');
    expect(await snapshot()).toEqual(after);
    // Nor can the reader probe with its own rate within its step: every figure but its own rate stays the same.
    await commit(attacker, attackerMachine, 1_040_000n, '2');
    const probed = await snapshot();
    expect(probed.your_rate_micro).toBe('1040000');
    expect({ ...probed, your_rate_micro: after.your_rate_micro }).toEqual(after);
  });
});
