// Issue 7 item 2: values the schemas used to allow (2^63, 38 digits, a budget past the ledger's bound) answered
// 500 INTERNAL. Every MicroAmount and byte count now has one documented bound in the shared schemas, refused as
// 422 VALIDATION_FAILED naming the field, and the ledger refuses an amount past its own bound as a domain error.
import { randomUUID } from 'node:crypto';
import { BYTE_COUNT_MAX, INT64_MAX, MICRO_AMOUNT_MAX } from '@ark/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../testing/app.js';
import { machinePublicKey, randomAddress, sampleManifest } from '../testing/hosting.js';
import { customImage, fund, type LiveMachine, liveMachine, postQuote, reserveJob, sshPublicKey } from '../testing/renting.js';
import { DIALECTS } from '../testing/stores.js';

type Json = Record<string, any>;

const TWO_TO_63 = (2n ** 63n).toString();
const DIGITS_38 = `1${'0'.repeat(37)}`;

function expectRefusal(res: { statusCode: number; body: string }, field: string, bound: bigint): void {
  expect(res.statusCode, res.body).toBe(422);
  const error = (JSON.parse(res.body) as Json).error;
  expect(error.code).toBe('VALIDATION_FAILED');
  expect(error.retryable).toBe(false);
  expect(error.message).toContain(field);
  expect(error.message).toContain(`from 0 to ${bound}`);
}

describe.each(DIALECTS)('bounds of amounts and byte counts on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let renter: SeededAccount;
  let machine: LiveMachine;

  beforeAll(async () => {
    // The spend-rate cap at its bound: these tests are about amounts, spend-cap.test.ts is about the cap.
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 1000, spendRateCapMicroPerHour: MICRO_AMOUNT_MAX } });
    renter = await seedAccount(t.ctx, { scopes: ['renter'] });
    machine = await liveMachine(t.ctx, t.app);
    for (let i = 0; i < 4; i++) await fund(t.ctx, renter.accountId, MICRO_AMOUNT_MAX);
  });

  afterAll(async () => {
    await t?.destroy();
  });

  const quoteBody = (extra: Json = {}) => ({
    offer_id: machine.offerId,
    gpu_count: 1,
    duration_limit_s: 3600,
    image_digest: customImage(),
    ...extra,
  });

  it('refuses a budget_micro past MICRO_AMOUNT_MAX on a quote, naming the field and the bound', async () => {
    for (const budget of [TWO_TO_63, DIGITS_38, (MICRO_AMOUNT_MAX + 1n).toString(), '9999999999999999']) {
      expectRefusal(await postQuote(t.app, renter, quoteBody({ budget_micro: budget })), 'body/budget_micro', MICRO_AMOUNT_MAX);
    }
  });

  it('quotes and reserves a budget of exactly MICRO_AMOUNT_MAX', async () => {
    const { jobId, quote } = await reserveJob(t.app, renter, machine, { budget_micro: MICRO_AMOUNT_MAX.toString() });
    expect(quote.budget_micro).toBe(MICRO_AMOUNT_MAX.toString());
    const job = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}`, headers: bearer(renter.apiKey) });
    expect(job.json()).toMatchObject({ funded_budget_micro: MICRO_AMOUNT_MAX.toString() });
    // Further budget for it would pass the bound: refused by the schema before anything else is read.
    const extended = await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${jobId}/budget-extension`,
      headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        additional_budget_micro: (MICRO_AMOUNT_MAX + 1n).toString(),
        new_duration_limit_s: 3600,
        expected_job_version: job.json().job_version,
        expected_budget_version: job.json().budget_version,
      },
    });
    expectRefusal(extended, 'body/additional_budget_micro', MICRO_AMOUNT_MAX);
    // One micro more is a valid amount, but the funded budget is one amount too: BUDGET_LIMIT_EXCEEDED, not a 500.
    const oneMore = await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${jobId}/budget-extension`,
      headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        additional_budget_micro: '1',
        new_duration_limit_s: 3600,
        expected_job_version: job.json().job_version,
        expected_budget_version: job.json().budget_version,
      },
    });
    expect(oneMore.statusCode, oneMore.body).toBe(409);
    expect(oneMore.json().error.code).toBe('BUDGET_LIMIT_EXCEEDED');
  });

  it('caps the default budget at MICRO_AMOUNT_MAX when the estimate passes it, and reserves it', async () => {
    const pricey = await liveMachine(t.ctx, t.app);
    const now = t.clock.now();
    const current = await t.app.inject({
      method: 'GET',
      url: `/api/v1/hosts/machines/${pricey.machineId}`,
      headers: bearer(pricey.host.apiKey),
    });
    const committed = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${pricey.machineId}/offer`,
      headers: { ...bearer(pricey.host.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        rate_micro_per_hour: (MICRO_AMOUNT_MAX / 2n).toString(),
        included_quotas: { included_disk_gib: 10, included_egress_gib: 10 },
        available_from: now.toISOString(),
        available_until: new Date(now.getTime() + 7 * 86_400_000).toISOString(),
        expected_version: current.json().offer.offer_version,
      },
    });
    expect(committed.statusCode, committed.body).toBe(202);
    // Two hours at half of 10^15 an hour, fee included: an estimate past the bound, a budget at it (the hourly rate
    // itself stays within the bound, and within the spend-rate cap).
    const quoted = await postQuote(t.app, renter, { ...quoteBody(), offer_id: pricey.offerId, duration_limit_s: 7200 });
    expect(quoted.statusCode, quoted.body).toBe(201);
    expect(quoted.json().budget_micro).toBe(MICRO_AMOUNT_MAX.toString());
    expect(BigInt(quoted.json().estimated_total_micro)).toBeGreaterThan(MICRO_AMOUNT_MAX);
    const reserved = await t.app.inject({
      method: 'POST',
      url: '/api/v1/jobs',
      headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() },
      payload: { quote_id: quoted.json().quote_id, ssh_public_keys: [sshPublicKey()] },
    });
    expect(reserved.statusCode, reserved.body).toBe(202);
  });

  it('refuses versions past INT64_MAX on a budget extension', async () => {
    const { jobId } = await reserveJob(t.app, renter, machine);
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${jobId}/budget-extension`,
      headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() },
      payload: { additional_budget_micro: '1', new_duration_limit_s: 3600, expected_job_version: TWO_TO_63, expected_budget_version: '1' },
    });
    expectRefusal(res, 'body/expected_job_version', INT64_MAX);
  });

  it('refuses manifest byte counts past BYTE_COUNT_MAX on enrollment and on pairing, and accepts BYTE_COUNT_MAX', async () => {
    const host = await seedAccount(t.ctx, { role: 'host', scopes: ['host'] });
    const enroll = async (manifest: Json) => {
      const token = await t.app.inject({
        method: 'POST',
        url: '/api/v1/hosts/enrollment-tokens',
        headers: { ...bearer(host.apiKey), 'idempotency-key': randomUUID() },
      });
      expect(token.statusCode, token.body).toBe(201);
      return t.app.inject({
        method: 'POST',
        url: '/api/v1/agents/enroll',
        remoteAddress: randomAddress(),
        payload: { enrollment_token: token.json().enrollment_token, public_key: machinePublicKey(), manifest },
      });
    };
    const pair = (manifest: Json) =>
      t.app.inject({ method: 'POST', url: '/api/v1/hosts/pairings', remoteAddress: randomAddress(), payload: { manifest } });
    const base = sampleManifest();
    const huge: Array<[string, Json]> = [
      ['body/manifest/ram_bytes', { ...base, ram_bytes: TWO_TO_63 }],
      ['body/manifest/disk_bytes', { ...base, disk_bytes: DIGITS_38 }],
      ['body/manifest/gpus/0/vram_bytes', { ...base, gpus: [{ ...base.gpus[0], vram_bytes: TWO_TO_63 }] }],
    ];
    for (const [field, manifest] of huge) {
      expectRefusal(await enroll(manifest), field, BYTE_COUNT_MAX);
      expectRefusal(await pair(manifest), field, BYTE_COUNT_MAX);
    }
    const largest = {
      ...base,
      ram_bytes: BYTE_COUNT_MAX.toString(),
      disk_bytes: BYTE_COUNT_MAX.toString(),
      gpus: base.gpus.map((g) => ({ ...g, vram_bytes: BYTE_COUNT_MAX.toString() })),
    };
    const enrolled = await enroll(largest);
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    const machineId = enrolled.json().machine_id as string;
    const read = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${machineId}`, headers: bearer(host.apiKey) });
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().manifest.ram_bytes).toBe(BYTE_COUNT_MAX.toString());
    expect((await pair(largest)).statusCode).toBe(201);
  });

  it('refuses an offer rate past MICRO_AMOUNT_MAX and an expected_version past INT64_MAX', async () => {
    const now = t.clock.now();
    const commit = (extra: Json) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/hosts/machines/${machine.machineId}/offer`,
        headers: { ...bearer(machine.host.apiKey), 'idempotency-key': randomUUID() },
        payload: {
          rate_micro_per_hour: '500000',
          included_quotas: { included_disk_gib: 10, included_egress_gib: 10 },
          available_from: now.toISOString(),
          available_until: new Date(now.getTime() + 86_400_000).toISOString(),
          expected_version: '1',
          ...extra,
        },
      });
    expectRefusal(await commit({ rate_micro_per_hour: TWO_TO_63 }), 'body/rate_micro_per_hour', MICRO_AMOUNT_MAX);
    expectRefusal(await commit({ expected_version: TWO_TO_63 }), 'body/expected_version', INT64_MAX);
  });

  it('documents each bound in the OpenAPI document: pattern, maxLength and description', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const body = doc.paths['/api/v1/quotes'].post.requestBody.content['application/json'].schema;
    const budget = body.properties.budget_micro;
    expect(budget.maxLength).toBe(16);
    expect(new RegExp(budget.pattern).test(MICRO_AMOUNT_MAX.toString())).toBe(true);
    expect(new RegExp(budget.pattern).test((MICRO_AMOUNT_MAX + 1n).toString())).toBe(false);
    expect(budget.description).toContain(`from 0 to ${MICRO_AMOUNT_MAX}`);
    const enroll = doc.paths['/api/v1/agents/enroll'].post.requestBody.content['application/json'].schema;
    const ram = enroll.properties.manifest.properties.ram_bytes;
    expect(ram.maxLength).toBe(19);
    expect(ram.description).toContain(`from 0 to ${BYTE_COUNT_MAX}`);
  });
});
