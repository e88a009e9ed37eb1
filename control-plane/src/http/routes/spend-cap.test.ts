import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { totalRateMicroPerHour } from '../../domain/pricing.js';
import { verifyLedger } from '../../store/ledger.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import {
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

// The spend-rate cap (issue 10 item 5), end to end over HTTP on both stores: the operator's default, lowering
// without and raising with a step-up, the reservation refused over the cap with nothing held, a stopped job giving
// its rate back, and racing reservations of one account of which exactly as many land as fit.

type Json = Record<string, any>;
const URL = '/api/v1/account/spend-cap';
/** The operator default in these tests: room for three jobs at the seed rate, not four. */
const DEFAULT_CAP = 2_000_000n;

function expectError(res: { statusCode: number; json(): Json }, status: number, code: string): void {
  expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
  expect(res.json().error.code).toBe(code);
}

describe.each(DIALECTS)('spend-rate cap on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  /** The total rate (machine rate plus fee) of one job on a freshly listed machine. */
  let jobRate: bigint;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 1000, spendRateCapMicroPerHour: DEFAULT_CAP } });
    jobRate = totalRateMicroPerHour(t.ctx.config.seedRateMicroPerHour, t.ctx.config.platformFeeBps);
    // The arithmetic below assumes three jobs fit under the default and four do not.
    expect(3n * jobRate <= DEFAULT_CAP && 4n * jobRate > DEFAULT_CAP).toBe(true);
  });
  afterAll(async () => {
    await t.destroy();
  });
  afterEach(async () => {
    const verification = await verifyLedger(t.store);
    expect(verification.discrepancies).toEqual([]);
    expect(verification.ok).toBe(true);
  });

  const renter = async (): Promise<SeededAccount> => {
    const account = await seedAccount(t.ctx, { scopes: ['renter'] });
    await fund(t.ctx, account.accountId, 100_000_000n);
    return account;
  };
  const getCap = async (account: SeededAccount, token = account.apiKey): Promise<Json> => {
    const res = await t.app.inject({ method: 'GET', url: URL, headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Json;
  };
  const putCap = (account: SeededAccount, cap: string | null | Json, key = randomUUID(), token = account.apiKey) =>
    t.app.inject({
      method: 'PUT',
      url: URL,
      headers: { ...bearer(token), 'idempotency-key': key },
      payload: cap !== null && typeof cap === 'object' ? cap : { cap_micro_per_hour: cap },
    });
  /** A person steps up a session (a key takes no password step-up). */
  const stepUp = async (account: SeededAccount, token = account.sessionToken) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/account/step-up',
      headers: bearer(token),
      payload: { password: account.password },
    });
    expect(res.statusCode, res.body).toBe(200);
  };
  const quote = async (account: SeededAccount, machine: LiveMachine) =>
    postQuote(t.app, account, { offer_id: machine.offerId, gpu_count: 1, duration_limit_s: 3600, image_digest: customImage() });
  /** One key line for every reservation, so a replayed request is the same request. */
  const sshKey = sshPublicKey();
  const reserve = (account: SeededAccount, quoteId: string, key = randomUUID()) =>
    postJob(t.app, account, { quote_id: quoteId, ssh_public_keys: [sshKey] }, key);
  /** The money of the balance (deposit and top-up histories are the billing tests' concern). */
  const money = async (account: SeededAccount) => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: bearer(account.apiKey) });
    const { deposits: _deposits, top_ups: _topUps, ...rest } = res.json() as Json;
    return rest;
  };
  const jobCount = async (account: SeededAccount) =>
    (await t.store.db.selectFrom('jobs').select('id').where('account_id', '=', account.accountId).execute()).length;
  const auditOf = (account: SeededAccount) =>
    t.store.db
      .selectFrom('audit_log')
      .select(['action', 'detail', 'at'])
      .where('subject', '=', account.accountId)
      .where('action', '=', 'spend_cap.changed')
      .orderBy('at')
      .execute();

  it("GET shows the operator's default and the summed total rate of the account's unstopped jobs", async () => {
    const account = await renter();
    expect(await getCap(account)).toEqual({
      cap_micro_per_hour: DEFAULT_CAP.toString(),
      default_cap_micro_per_hour: DEFAULT_CAP.toString(),
      is_default: true,
      committed_micro_per_hour: '0',
      available_micro_per_hour: DEFAULT_CAP.toString(),
    });
    await reserveJob(t.app, account, await liveMachine(t.ctx, t.app));
    await reserveJob(t.app, account, await liveMachine(t.ctx, t.app));
    expect(await getCap(account)).toMatchObject({
      cap_micro_per_hour: DEFAULT_CAP.toString(),
      committed_micro_per_hour: (2n * jobRate).toString(),
      available_micro_per_hour: (DEFAULT_CAP - 2n * jobRate).toString(),
    });
    // Another account's jobs are not this one's.
    expect((await getCap(await renter())).committed_micro_per_hour).toBe('0');
    // A host-only key has no renter scope.
    const host = await seedAccount(t.ctx, { role: 'host', scopes: ['host'] });
    expectError(await t.app.inject({ method: 'GET', url: URL, headers: bearer(host.apiKey) }), 403, 'SCOPE_REQUIRED');
  });

  it('lowers without a step-up, raises only with a fresh one, and audits every change', async () => {
    const account = await renter();
    // An API key that never stepped up may tighten its own leash.
    const lowered = await putCap(account, '1000000');
    expect(lowered.statusCode, lowered.body).toBe(200);
    expect(lowered.json()).toEqual({
      cap_micro_per_hour: '1000000',
      default_cap_micro_per_hour: DEFAULT_CAP.toString(),
      is_default: false,
      committed_micro_per_hour: '0',
      available_micro_per_hour: '1000000',
    });
    expect((await putCap(account, '1000000')).statusCode).toBe(200);
    expect((await putCap(account, '0')).json()).toMatchObject({ cap_micro_per_hour: '0', available_micro_per_hour: '0' });

    // Raising, to a value or back to a larger default, is refused without a step-up and changes nothing.
    expectError(await putCap(account, '1'), 403, 'STEP_UP_REQUIRED');
    expectError(await putCap(account, null), 403, 'STEP_UP_REQUIRED');
    expect((await getCap(account)).cap_micro_per_hour).toBe('0');

    await stepUp(account);
    const raised = await putCap(account, '1500000', randomUUID(), account.sessionToken);
    expect(raised.statusCode, raised.body).toBe(200);
    expect(raised.json()).toMatchObject({ cap_micro_per_hour: '1500000', is_default: false });
    const back = await putCap(account, null, randomUUID(), account.sessionToken);
    expect(back.json()).toMatchObject({ cap_micro_per_hour: DEFAULT_CAP.toString(), is_default: true });
    // Null while already on the default changes nothing and needs nothing.
    expect((await putCap(account, null)).statusCode).toBe(200);

    // The step-up is on the credential and expires: the key never stepped up, and the session's proof runs out.
    expectError(await putCap(account, (DEFAULT_CAP + 1n).toString()), 403, 'STEP_UP_REQUIRED');
    await t.clock.advance(t.ctx.config.stepUpTtlMs);
    expectError(await putCap(account, (DEFAULT_CAP + 1n).toString(), randomUUID(), account.sessionToken), 403, 'STEP_UP_REQUIRED');
    expect((await putCap(account, '700000')).statusCode).toBe(200);

    const audit = await auditOf(account);
    expect(audit.map((row) => JSON.parse(row.detail))).toEqual([
      { from: null, to: '1000000', default: DEFAULT_CAP.toString(), raised: false, via: 'api-key' },
      { from: '1000000', to: '0', default: DEFAULT_CAP.toString(), raised: false, via: 'api-key' },
      { from: '0', to: '1500000', default: DEFAULT_CAP.toString(), raised: true, via: 'session', step_up: 'password' },
      { from: '1500000', to: null, default: DEFAULT_CAP.toString(), raised: true, via: 'session', step_up: 'password' },
      { from: null, to: '700000', default: DEFAULT_CAP.toString(), raised: false, via: 'api-key' },
    ]);
  });

  it('refuses a reservation over the cap with 409 SPEND_RATE_CAP_EXCEEDED, holding nothing; the quote still reserves once the cap is raised', async () => {
    const account = await renter();
    const first = await reserveJob(t.app, account, await liveMachine(t.ctx, t.app));
    const second = await liveMachine(t.ctx, t.app);
    const quoted = await quote(account, second);
    expect(quoted.statusCode, quoted.body).toBe(201);
    const quoteId = quoted.json().quote_id as string;

    // One micro short of room for the second job. Lower, so no step-up.
    const cap = 2n * jobRate - 1n;
    expect((await putCap(account, cap.toString())).statusCode).toBe(200);
    const before = await money(account);
    const jobsBefore = await jobCount(account);

    const key = randomUUID();
    const refused = await reserve(account, quoteId, key);
    expectError(refused, 409, 'SPEND_RATE_CAP_EXCEEDED');
    expect(refused.json().error.retryable).toBe(false);
    // The message names the cap, what is committed and this job's rate.
    for (const figure of [cap, jobRate]) expect(refused.json().error.message).toContain(figure.toString());
    expect(await money(account)).toEqual(before);
    expect(await jobCount(account)).toBe(jobsBefore);
    const stored = await t.store.db.selectFrom('quotes').select(['used_at', 'job_id']).where('id', '=', quoteId).executeTakeFirstOrThrow();
    expect(stored).toEqual({ used_at: null, job_id: null });
    // A new quote is refused at once too: the renter learns before reserving.
    expectError(await quote(account, second), 409, 'SPEND_RATE_CAP_EXCEEDED');

    // A cap under what is already committed is allowed: it refuses new reservations and stops nothing.
    const under = await putCap(account, (jobRate - 1n).toString());
    expect(under.json()).toMatchObject({ committed_micro_per_hour: jobRate.toString(), available_micro_per_hour: '0' });
    expect((await t.store.db.selectFrom('jobs').select('state').where('id', '=', first.jobId).executeTakeFirstOrThrow()).state).toBe(
      'RESERVED',
    );

    await stepUp(account);
    expect((await putCap(account, (2n * jobRate).toString(), randomUUID(), account.sessionToken)).statusCode).toBe(200);
    // The refusal is the key's answer for good (a non-retryable error replays); a new key reserves with the same quote.
    const replayed = await reserve(account, quoteId, key);
    expectError(replayed, 409, 'SPEND_RATE_CAP_EXCEEDED');
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    const reserved = await reserve(account, quoteId);
    expect(reserved.statusCode, reserved.body).toBe(202);
    expect(await getCap(account)).toMatchObject({ committed_micro_per_hour: (2n * jobRate).toString(), available_micro_per_hour: '0' });
  });

  it('gives a stopped job’s rate back once the machine confirms the stop', async () => {
    const account = await renter();
    expect((await putCap(account, jobRate.toString())).statusCode).toBe(200);
    const machine = await liveMachine(t.ctx, t.app);
    const { jobId } = await reserveJob(t.app, account, machine);
    const other = await liveMachine(t.ctx, t.app);
    expectError(await quote(account, other), 409, 'SPEND_RATE_CAP_EXCEEDED');

    const stop = await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${jobId}/stop`,
      headers: { ...bearer(account.apiKey), 'idempotency-key': randomUUID() },
      payload: { reason: 'done' },
    });
    expect(stop.json().state).toBe('STOPPING');
    // STOPPING may still take a final receipt: its rate still counts.
    expect((await getCap(account)).committed_micro_per_hour).toBe(jobRate.toString());
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'stopped', t.clock.now(), { exit_code: 0 }));
    expect((await t.store.db.selectFrom('jobs').select('state').where('id', '=', jobId).executeTakeFirstOrThrow()).state).toBe('STOPPED');
    expect(await getCap(account)).toMatchObject({ committed_micro_per_hour: '0', available_micro_per_hour: jobRate.toString() });
    await reserveJob(t.app, account, other);
  });

  it('lets exactly as many racing reservations of one account land as fit under its cap', async () => {
    const account = await renter();
    const fits = 3;
    const racing = 7;
    expect((await putCap(account, (BigInt(fits) * jobRate).toString())).statusCode).toBe(200);
    const quoteIds: string[] = [];
    for (let i = 0; i < racing; i++) {
      const quoted = await quote(account, await liveMachine(t.ctx, t.app));
      expect(quoted.statusCode, quoted.body).toBe(201);
      quoteIds.push(quoted.json().quote_id);
    }
    const before = BigInt((await money(account)).available_micro);
    const answers = await Promise.all(quoteIds.map((id) => reserve(account, id)));
    const statuses = answers.map((res) => res.statusCode);
    expect(statuses.filter((s) => s === 202)).toHaveLength(fits);
    for (const res of answers.filter((r) => r.statusCode !== 202)) expectError(res, 409, 'SPEND_RATE_CAP_EXCEEDED');
    expect(await jobCount(account)).toBe(fits);
    expect(await getCap(account)).toMatchObject({
      committed_micro_per_hour: (BigInt(fits) * jobRate).toString(),
      available_micro_per_hour: '0',
    });
    // Only the landed reservations hold money: one quoted budget (an hour at the job's rate) each.
    const held = before - BigInt((await money(account)).available_micro);
    expect(held).toBe(BigInt(fits) * jobRate);
  });

  it('refuses bad bodies with 422 naming the field, and needs an Idempotency-Key', async () => {
    const account = await renter();
    for (const body of [
      { cap_micro_per_hour: 'lots' },
      { cap_micro_per_hour: 5 },
      { cap_micro_per_hour: '-5' },
      { cap_micro_per_hour: '007' },
      { cap_micro_per_hour: '1000000000000001' },
      { cap_micro_per_hour: '1', extra: true },
      {},
    ]) {
      const res = await putCap(account, body);
      expectError(res, 422, 'VALIDATION_FAILED');
      expect(res.json().error.message).toMatch(/cap_micro_per_hour|extra/);
    }
    // The header is part of the route's schema: refused before the handler, naming it.
    const noKey = await t.app.inject({ method: 'PUT', url: URL, headers: bearer(account.apiKey), payload: { cap_micro_per_hour: '1' } });
    expect(noKey.statusCode).toBe(422);
    expect(['IDEMPOTENCY_KEY_REQUIRED', 'VALIDATION_FAILED']).toContain(noKey.json().error.code);
    expect(noKey.json().error.message).toMatch(/idempotency-key/i);
    expect((await getCap(account)).is_default).toBe(true);
    expect(await auditOf(account)).toEqual([]);
  });

  it('replays an Idempotency-Key with the same answer, and refuses it for another body', async () => {
    const account = await renter();
    const key = randomUUID();
    const first = await putCap(account, '900000', key);
    expect(first.statusCode, first.body).toBe(200);
    // The cap moves on under another key; the first key still answers what it did.
    expect((await putCap(account, '800000')).statusCode).toBe(200);
    const again = await putCap(account, '900000', key);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect((await getCap(account)).cap_micro_per_hour).toBe('800000');
    expectError(await putCap(account, '700000', key), 409, 'IDEMPOTENCY_CONFLICT');
    expect((await auditOf(account)).length).toBe(2);
  });
});
