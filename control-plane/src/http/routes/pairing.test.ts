import { createHash, randomUUID } from 'node:crypto';
import { PairingCreated, PairingStatus } from '@ark/shared';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { loadControlPlaneIdentity } from '../../gateway/identity.js';
import { isHostEnabled, setHostingBlocked } from '../../store/hosts.js';
import { issueEnrollmentToken } from '../../services/hosting/enrollment.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { machinePublicKey, pairMachine, sampleManifest, sendHeartbeat } from '../../testing/hosting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;
type Res = { statusCode: number; json(): Json; body: string };

function expectError(res: Res, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().error.code).toBe(code);
  return res.json().error as { code: string; message: string; retryable: boolean };
}

const statusSchema = TypeCompiler.Compile(PairingStatus);
const createdSchema = TypeCompiler.Compile(PairingCreated);

describe.each(DIALECTS)('host pairing and enrollment on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let address = 0;
  /** A fresh source address per test, so per-address limits of one test never touch another. */
  const nextAddress = () => `127.200.${Math.floor(++address / 250)}.${address % 250}`;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { publicBaseUrl: 'https://ark.example.test', newHostMachineCap: 3 } });
  });
  afterAll(async () => {
    await t.destroy();
  });

  const inject = (options: InjectOptions) => t.app.inject(options);
  const post = (url: string, payload: unknown, options: { token?: string; idempotent?: boolean; ip?: string } = {}) =>
    inject({
      method: 'POST',
      url,
      payload: payload as Json,
      remoteAddress: options.ip ?? '127.0.0.1',
      headers: { ...(options.token ? bearer(options.token) : {}), ...(options.idempotent ? { 'idempotency-key': randomUUID() } : {}) },
    });
  const startPairing = async (ip = nextAddress()) => {
    const res = await post('/api/v1/hosts/pairings', { manifest: sampleManifest() }, { ip });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { pairing_id: string; poll_secret: string; user_code: string; expires_at: string };
  };
  const poll = (pairing: { pairing_id: string; poll_secret: string }) =>
    post('/api/v1/hosts/pairings/poll', { pairing_id: pairing.pairing_id, poll_secret: pairing.poll_secret });
  const approve = (code: string, token: string, ip = '127.0.0.1', extra: Json = {}) =>
    post('/api/v1/hosts/pairings/approve', { user_code: code, ...extra }, { token, idempotent: true, ip });
  const lookup = (code: string, token: string, ip = '127.0.0.1') =>
    post('/api/v1/hosts/pairings/lookup', { user_code: code }, { token, ip });
  const host = (options: Parameters<typeof seedAccount>[1] = {}) => seedAccount(t.ctx, options);

  it('runs the whole flow: create, lookup, approve, poll hands the token out once, enroll, go-live state', async () => {
    const owner = await host();
    expect(await isHostEnabled(t.store.db, owner.accountId)).toBe(false);
    const created = await post('/api/v1/hosts/pairings', { manifest: sampleManifest() }, { ip: nextAddress() });
    expect(created.statusCode).toBe(201);
    const pairing = created.json();
    expect(createdSchema.Check(pairing)).toBe(true);
    expect(pairing.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(pairing.verification_uri).toBe('https://ark.example.test/pair');
    expect(pairing.interval_s).toBe(5);
    expect(new Date(pairing.expires_at).getTime() - t.clock.now().getTime()).toBe(15 * 60_000);
    // Only the hash of the poll secret is kept.
    const stored = await t.store.db.selectFrom('pairings').selectAll().where('id', '=', pairing.pairing_id).executeTakeFirstOrThrow();
    expect(stored.poll_secret_hash).toBe(createHash('sha256').update(pairing.poll_secret).digest('hex'));

    let status = await poll(pairing);
    expect(status.json()).toEqual({ status: 'pending', expires_at: pairing.expires_at, go_live: true, machine: null });

    // Lookups ignore case and dashes.
    const looked = await lookup(pairing.user_code.toLowerCase().replace('-', ''), owner.sessionToken);
    expect(looked.statusCode, looked.body).toBe(200);
    expect(looked.json()).toEqual({
      summary: {
        hostname: 'rig-01',
        gpu_count: 2,
        gpu_models: ['NVIDIA GeForce RTX 4090'],
        agent_version: '0.1.0',
        requested_at: t.clock.now().toISOString(),
      },
      expires_at: pairing.expires_at,
    });

    const approved = await approve(pairing.user_code, owner.sessionToken);
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json()).toEqual({ approved: true, go_live: true, summary: looked.json().summary });
    // First use turns hosting on, in the account view too.
    expect(await isHostEnabled(t.store.db, owner.accountId)).toBe(true);
    const account = await inject({ method: 'GET', url: '/api/v1/account', headers: bearer(owner.sessionToken) });
    expect(account.json().host_enabled).toBe(true);
    const audit = await t.store.db.selectFrom('audit_log').selectAll().where('subject', '=', pairing.pairing_id).execute();
    expect(audit.map((a) => [a.action, a.actor_account_id])).toEqual([['hosting.pairing.approved', owner.accountId]]);
    // The code is spent: looking it up again is a miss.
    expectError(await lookup(pairing.user_code, owner.sessionToken, nextAddress()), 404, 'PAIRING_CODE_INVALID');

    await t.clock.advance(5_000);
    status = await poll(pairing);
    const handed = status.json();
    expect(statusSchema.Check(handed)).toBe(true);
    expect(handed.status).toBe('approved');
    expect(handed.enrollment_token).toMatch(/^arkenr_[A-Za-z0-9_-]{43}$/);
    expect(handed.expires_at).toBe(new Date(t.clock.now().getTime() + 10 * 60_000).toISOString());
    expect(handed.machine).toBeNull();
    const tokenRow = await t.store.db
      .selectFrom('enrollment_tokens')
      .selectAll()
      .where('pairing_id', '=', pairing.pairing_id)
      .executeTakeFirstOrThrow();
    expect(tokenRow.token_hash).toBe(createHash('sha256').update(handed.enrollment_token).digest('hex'));

    // The next poll sees consumed, without a token.
    status = await poll(pairing);
    expect(status.json()).toEqual({ status: 'consumed', expires_at: handed.expires_at, go_live: true, machine: null });

    const enrolled = await post('/api/v1/agents/enroll', {
      enrollment_token: handed.enrollment_token,
      public_key: machinePublicKey(),
      manifest: sampleManifest(),
    });
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    const identity = await loadControlPlaneIdentity(t.store, t.ctx.config.secretKey);
    const machineId = enrolled.json().machine_id;
    expect(enrolled.json()).toEqual({
      machine_id: machineId,
      control_plane_public_key: identity.publicKeyBase64,
      channel_url: 'wss://ark.example.test/api/v1/agents/channel?v=1',
    });

    status = await poll(pairing);
    expect(status.json()).toEqual({
      status: 'consumed',
      expires_at: handed.expires_at,
      go_live: true,
      machine: { machine_id: machineId, live: 'waiting', error: null },
    });
    expect(statusSchema.Check(status.json())).toBe(true);

    await sendHeartbeat(t.ctx, machineId, true);
    status = await poll(pairing);
    expect(status.json().machine).toEqual({ machine_id: machineId, live: 'live', error: null });
  });

  it('carries go_live false through to the machine (off, no seeded offer)', async () => {
    const owner = await host();
    const paired = await pairMachine(t.app, owner, { goLive: false });
    const status = await poll({ pairing_id: paired.pairingId, poll_secret: paired.pollSecret });
    expect(status.json()).toMatchObject({
      status: 'consumed',
      go_live: false,
      machine: { machine_id: paired.machineId, live: 'off', error: null },
    });
    expect(await t.store.db.selectFrom('offers').selectAll().where('machine_id', '=', paired.machineId).execute()).toEqual([]);
  });

  it("reports failed with the agent's problems when it is unhealthy before going live", async () => {
    const owner = await host();
    const paired = await pairMachine(t.app, owner);
    await sendHeartbeat(t.ctx, paired.machineId, false, ['docker unreachable']);
    expect((await poll({ pairing_id: paired.pairingId, poll_secret: paired.pollSecret })).json().machine).toEqual({
      machine_id: paired.machineId,
      live: 'failed',
      error: 'docker unreachable',
    });
  });

  it('expires a code after 15 minutes', async () => {
    const owner = await host();
    const pairing = await startPairing();
    await t.clock.advance(15 * 60_000 - 1);
    expect((await poll(pairing)).json().status).toBe('pending');
    await t.clock.advance(1);
    expect((await poll(pairing)).json()).toEqual({ status: 'expired', expires_at: pairing.expires_at, go_live: true, machine: null });
    expectError(await lookup(pairing.user_code, owner.sessionToken, nextAddress()), 404, 'PAIRING_CODE_INVALID');
    expectError(await approve(pairing.user_code, owner.sessionToken, nextAddress()), 404, 'PAIRING_CODE_INVALID');
    expect((await poll(pairing)).json().status).toBe('expired');
  });

  it('answers 429 after 10 wrong codes an hour per account', async () => {
    const owner = await host();
    const pairing = await startPairing();
    for (let i = 0; i < 10; i++) expectError(await lookup('BBBB-BBBB', owner.sessionToken, nextAddress()), 404, 'PAIRING_CODE_INVALID');
    // Even the right code, from yet another address, is refused now; approve counts the same misses.
    const limited = expectError(await lookup(pairing.user_code, owner.sessionToken, nextAddress()), 429, 'UNAVAILABLE');
    expect(limited.retryable).toBe(true);
    expectError(await approve(pairing.user_code, owner.sessionToken, nextAddress()), 429, 'UNAVAILABLE');
    // A sliding hour: the misses age out.
    await t.clock.advance(3_600_000);
    expect((await lookup(pairing.user_code, owner.sessionToken, nextAddress())).statusCode).toBe(404); // expired by now
  });

  it('answers 429 after 10 wrong codes an hour per address, whoever asks', async () => {
    const ip = nextAddress();
    const pairing = await startPairing();
    for (let i = 0; i < 10; i++) {
      const someone = await host();
      expectError(await approve(`ZZZZ-ZZZ${'BCDFGHJKLM'[i]}`, someone.sessionToken, ip), 404, 'PAIRING_CODE_INVALID');
    }
    const fresh = await host();
    expectError(await approve(pairing.user_code, fresh.sessionToken, ip), 429, 'UNAVAILABLE');
    expect((await approve(pairing.user_code, fresh.sessionToken, nextAddress())).statusCode).toBe(200);
  });

  it('counts malformed codes as misses too', async () => {
    const owner = await host();
    for (let i = 0; i < 10; i++) expectError(await lookup('not a code', owner.sessionToken, nextAddress()), 404, 'PAIRING_CODE_INVALID');
    expectError(await lookup('not a code', owner.sessionToken, nextAddress()), 429, 'UNAVAILABLE');
  });

  it('needs a verified session for lookup', async () => {
    const pairing = await startPairing();
    const owner = await host();
    expectError(await lookup(pairing.user_code, owner.apiKey), 403, 'FORBIDDEN');
    const unverified = await host({ verified: false });
    expectError(await lookup(pairing.user_code, unverified.sessionToken), 403, 'EMAIL_NOT_VERIFIED');
    expectError(await post('/api/v1/hosts/pairings/lookup', { user_code: pairing.user_code }), 401, 'UNAUTHENTICATED');
  });

  it('approves with an API key that has the host scope, not without it', async () => {
    const pairing = await startPairing();
    const renterOnly = await host({ scopes: ['renter'] });
    expectError(await approve(pairing.user_code, renterOnly.apiKey), 403, 'SCOPE_REQUIRED');
    const hostKey = await host({ scopes: ['host'] });
    const res = await approve(pairing.user_code, hostKey.apiKey, '127.0.0.1', { go_live: false });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().go_live).toBe(false);
  });

  it('refuses an unverified email and a blocked host at approve', async () => {
    const pairing = await startPairing();
    const unverified = await host({ verified: false });
    expectError(await approve(pairing.user_code, unverified.sessionToken), 403, 'EMAIL_NOT_VERIFIED');
    expect(await isHostEnabled(t.store.db, unverified.accountId)).toBe(false);
    const blocked = await host();
    await setHostingBlocked(t.store.db, blocked.accountId, true, t.clock.now());
    expectError(await approve(pairing.user_code, blocked.sessionToken), 403, 'HOSTING_BLOCKED');
    expect((await poll(pairing)).json().status).toBe('pending');
  });

  it('caps the machines a new host pairs in its first 24 hours', async () => {
    const owner = await host();
    for (let i = 0; i < 3; i++) await pairMachine(t.app, owner);
    const fourth = await startPairing();
    expectError(await approve(fourth.user_code, owner.sessionToken), 403, 'NEW_HOST_MACHINE_CAP_REACHED');
    const token = await post('/api/v1/hosts/enrollment-tokens', undefined, { token: owner.apiKey, idempotent: true });
    expectError(token, 403, 'NEW_HOST_MACHINE_CAP_REACHED');
    await t.clock.advance(24 * 3_600_000);
    const later = await startPairing();
    // The seeded session expired meanwhile; the host's key approves.
    expect((await approve(later.user_code, owner.apiKey)).statusCode).toBe(200);
  });

  it('frees a place in the cap when an enrollment token expires unused', async () => {
    const owner = await host();
    for (let i = 0; i < 3; i++)
      expect((await post('/api/v1/hosts/enrollment-tokens', undefined, { token: owner.apiKey, idempotent: true })).statusCode).toBe(201);
    expectError(
      await post('/api/v1/hosts/enrollment-tokens', undefined, { token: owner.apiKey, idempotent: true }),
      403,
      'NEW_HOST_MACHINE_CAP_REACHED',
    );
    await t.clock.advance(10 * 60_000);
    expect((await post('/api/v1/hosts/enrollment-tokens', undefined, { token: owner.apiKey, idempotent: true })).statusCode).toBe(201);
  });

  it('re-checks the hosting rules when the token is handed out', async () => {
    // Blocked after approval: no token, the pairing stays approved, and unblocking lets it through.
    const owner = await host();
    const pairing = await startPairing();
    expect((await approve(pairing.user_code, owner.sessionToken)).statusCode).toBe(200);
    await setHostingBlocked(t.store.db, owner.accountId, true, t.clock.now());
    expectError(await poll(pairing), 403, 'HOSTING_BLOCKED');
    await setHostingBlocked(t.store.db, owner.accountId, false, t.clock.now());
    expect((await poll(pairing)).json().status).toBe('approved');

    // Approved with an API key that is revoked before the poll.
    const keyHolder = await host({ scopes: ['host'] });
    const second = await startPairing();
    expect((await approve(second.user_code, keyHolder.apiKey)).statusCode).toBe(200);
    await t.store.db
      .updateTable('api_keys')
      .set({ revoked_at: t.clock.now().toISOString() })
      .where('id', '=', keyHolder.apiKeyId)
      .execute();
    expectError(await poll(second), 403, 'HOSTING_SCOPE_REVOKED');

    // The email stopped being verified.
    const third = await startPairing();
    const changed = await host();
    expect((await approve(third.user_code, changed.sessionToken)).statusCode).toBe(200);
    await t.store.db.updateTable('accounts').set({ email_verified_at: null }).where('id', '=', changed.accountId).execute();
    expectError(await poll(third), 403, 'EMAIL_NOT_VERIFIED');

    // Other grants landed meanwhile (another replica): the cap counts them, not this pairing itself.
    const busy = await host();
    const fourth = await startPairing();
    expect((await approve(fourth.user_code, busy.sessionToken)).statusCode).toBe(200);
    for (let i = 0; i < 3; i++)
      await issueEnrollmentToken(t.store.db, { accountId: busy.accountId, pairingId: null, goLive: true, now: t.clock.now() });
    expectError(await poll(fourth), 403, 'NEW_HOST_MACHINE_CAP_REACHED');
    expect((await poll(fourth)).statusCode).toBe(403);
  });

  it('answers 404 to a wrong pairing_id or poll_secret', async () => {
    const pairing = await startPairing();
    expectError(await poll({ pairing_id: randomUUID(), poll_secret: pairing.poll_secret }), 404, 'NOT_FOUND');
    expectError(await poll({ pairing_id: pairing.pairing_id, poll_secret: `${pairing.poll_secret}x` }), 404, 'NOT_FOUND');
    expectError(await poll({ pairing_id: pairing.pairing_id, poll_secret: 'x'.repeat(201) }), 422, 'VALIDATION_FAILED');
    expect((await poll(pairing)).statusCode).toBe(200);
  });

  it('replays an approval with the same Idempotency-Key', async () => {
    const owner = await host();
    const pairing = await startPairing();
    const key = randomUUID();
    const once = await inject({
      method: 'POST',
      url: '/api/v1/hosts/pairings/approve',
      headers: { ...bearer(owner.sessionToken), 'idempotency-key': key },
      payload: { user_code: pairing.user_code },
    });
    const twice = await inject({
      method: 'POST',
      url: '/api/v1/hosts/pairings/approve',
      headers: { ...bearer(owner.sessionToken), 'idempotency-key': key },
      payload: { user_code: pairing.user_code },
    });
    expect(once.statusCode).toBe(200);
    expect(twice.statusCode).toBe(200);
    expect(twice.headers['idempotent-replayed']).toBe('true');
    expect(twice.json()).toEqual(once.json());
    expectError(await approve(pairing.user_code, owner.sessionToken), 404, 'PAIRING_CODE_INVALID');
  });

  it('refuses unknown properties in the pairing body', async () => {
    expectError(
      await post('/api/v1/hosts/pairings', { manifest: sampleManifest(), extra: 1 }, { ip: nextAddress() }),
      422,
      'VALIDATION_FAILED',
    );
  });

  it('rate limits pairing creation per source address', async () => {
    const ip = nextAddress();
    for (let i = 0; i < 20; i++) expect((await post('/api/v1/hosts/pairings', {}, { ip })).statusCode).toBe(201);
    expectError(await post('/api/v1/hosts/pairings', {}, { ip }), 429, 'UNAVAILABLE');
    // Without a manifest the summary says what it does not know.
    const other = await startPairing();
    const bare = (await post('/api/v1/hosts/pairings', {}, { ip: nextAddress() })).json();
    const owner = await host();
    const looked = await lookup(bare.user_code, owner.sessionToken, nextAddress());
    expect(looked.json().summary).toEqual({
      hostname: null,
      gpu_count: 0,
      gpu_models: [],
      agent_version: null,
      requested_at: t.clock.now().toISOString(),
    });
    expect(other.user_code).not.toBe(bare.user_code);
  });

  describe('enrollment tokens', () => {
    const createToken = (owner: SeededAccount, query = '') =>
      post(`/api/v1/hosts/enrollment-tokens${query}`, undefined, { token: owner.apiKey, idempotent: true });

    it('work exactly once, stored hashed', async () => {
      const owner = await host();
      const created = await createToken(owner);
      expect(created.statusCode, created.body).toBe(201);
      const { enrollment_token, expires_at } = created.json();
      expect(Object.keys(created.json()).sort()).toEqual(['enrollment_token', 'expires_at']);
      expect(expires_at).toBe(new Date(t.clock.now().getTime() + 10 * 60_000).toISOString());
      const rows = await t.store.db.selectFrom('enrollment_tokens').selectAll().where('account_id', '=', owner.accountId).execute();
      expect(rows.map((r) => r.token_hash)).toEqual([createHash('sha256').update(enrollment_token).digest('hex')]);
      expect(await isHostEnabled(t.store.db, owner.accountId)).toBe(true);

      const body = { enrollment_token, public_key: machinePublicKey(), manifest: sampleManifest() };
      const first = await post('/api/v1/agents/enroll', body);
      expect(first.statusCode, first.body).toBe(201);
      expectError(await post('/api/v1/agents/enroll', body), 409, 'ENROLLMENT_TOKEN_USED');
      // Racing twins: only one enrollment wins.
      const twin = (await createToken(owner)).json().enrollment_token;
      const results = await Promise.all([0, 1, 2].map(() => post('/api/v1/agents/enroll', { ...body, enrollment_token: twin })));
      expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409]);
      const machines = await t.store.db.selectFrom('machines').select('id').where('owner_account_id', '=', owner.accountId).execute();
      expect(machines).toHaveLength(2);
    });

    it('are refused when unknown or expired, and without the host scope', async () => {
      const owner = await host();
      const body = { enrollment_token: 'arkenr_nope', public_key: machinePublicKey(), manifest: sampleManifest() };
      expectError(await post('/api/v1/agents/enroll', body), 401, 'ENROLLMENT_TOKEN_INVALID');
      const token = (await createToken(owner)).json().enrollment_token;
      await t.clock.advance(10 * 60_000);
      expectError(await post('/api/v1/agents/enroll', { ...body, enrollment_token: token }), 401, 'ENROLLMENT_TOKEN_INVALID');
      const renterOnly = await host({ scopes: ['renter'] });
      expectError(await createToken(renterOnly), 403, 'SCOPE_REQUIRED');
      const unverified = await host({ verified: false });
      expectError(await createToken(unverified), 403, 'EMAIL_NOT_VERIFIED');
      expect((await post('/api/v1/hosts/enrollment-tokens', undefined, { token: owner.apiKey })).statusCode).toBe(422);
    });

    it('stop at a block that landed after they were issued', async () => {
      const owner = await host();
      const token = (await createToken(owner)).json().enrollment_token;
      await setHostingBlocked(t.store.db, owner.accountId, true, t.clock.now());
      const body = { enrollment_token: token, public_key: machinePublicKey(), manifest: sampleManifest() };
      expectError(await post('/api/v1/agents/enroll', body), 403, 'HOSTING_BLOCKED');
      await setHostingBlocked(t.store.db, owner.accountId, false, t.clock.now());
      // The refused attempt did not use the token up.
      expect((await post('/api/v1/agents/enroll', body)).statusCode).toBe(201);
    });

    it('with go_live=false enroll a machine that stays off', async () => {
      const owner = await host();
      const token = (await createToken(owner, '?go_live=false')).json().enrollment_token;
      const res = await post('/api/v1/agents/enroll', {
        enrollment_token: token,
        public_key: machinePublicKey(),
        manifest: sampleManifest(),
      });
      const machine = await t.store.db.selectFrom('machines').selectAll().where('id', '=', res.json().machine_id).executeTakeFirstOrThrow();
      expect(machine.live_state).toBe('off');
    });

    it('refuses a malformed enrollment body', async () => {
      const body = { enrollment_token: 'x', public_key: 'short', manifest: sampleManifest() };
      expectError(await post('/api/v1/agents/enroll', body), 422, 'VALIDATION_FAILED');
    });
  });
});
