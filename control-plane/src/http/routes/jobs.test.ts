import { randomUUID } from 'node:crypto';
import type { LaunchJobBody } from '@ark/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { amendmentsOf } from '../../store/jobs.js';
import { balanceOf, verifyLedger } from '../../store/ledger.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import {
  agentHeartbeat,
  customImage,
  deliver,
  fund,
  getJob,
  importTestTemplates,
  jobStatus,
  type LiveMachine,
  liveMachine,
  postJob,
  postQuote,
  queuedCommands,
  readyAccess,
  reserveJob,
  runJob,
  sshPublicKey,
} from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;

function expectError(res: { statusCode: number; json(): Json }, status: number, code: string): void {
  expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
  expect(res.json().error.code).toBe(code);
}

describe.each(DIALECTS)('jobs API on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let renter: SeededAccount;
  let admin: SeededAccount;
  let stranger: SeededAccount;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 1000, retrievalWindowS: 600 } });
    admin = await seedAccount(t.ctx, { role: 'admin' });
    stranger = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });
  afterEach(async () => {
    // The ledger's invariants hold after every scenario.
    const verification = await verifyLedger(t.store);
    expect(verification.discrepancies).toEqual([]);
    expect(verification.sumMicro).toBe(0n);
    expect(verification.ok).toBe(true);
  });

  const fresh = async (depositMicro = 10_000_000n): Promise<{ renter: SeededAccount; machine: LiveMachine }> => {
    const account = await seedAccount(t.ctx);
    await fund(t.ctx, account.accountId, depositMicro);
    return { renter: account, machine: await liveMachine(t.ctx, t.app) };
  };
  /** The money of the balance (its deposit history is the billing tests' concern). */
  const balance = async (account: SeededAccount) => {
    const {
      deposits: _deposits,
      top_ups: _topUps,
      credits: _credits,
      ...money
    } = (await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: bearer(account.apiKey) })).json();
    return money;
  };
  const post = (account: SeededAccount, url: string, payload: Json, key = randomUUID()) =>
    t.app.inject({ method: 'POST', url, headers: { ...bearer(account.sessionToken), 'idempotency-key': key }, payload });

  describe('reservation', () => {
    it('consumes the quote, holds the budget, answers 202 RESERVED and queues the launch', async () => {
      ({ renter } = await fresh());
      const machine = await liveMachine(t.ctx, t.app);
      const env = { HF_TOKEN: 'hf_supersecret_value', MODE: 'train' };
      const keys = [sshPublicKey('a'), sshPublicKey('b')];
      const quoted = await postQuote(t.app, renter, {
        offer_id: machine.offerId,
        gpu_count: 2,
        duration_limit_s: 3600,
        image_digest: customImage(),
      });
      const quote = quoted.json();
      const res = await postJob(t.app, renter, { quote_id: quote.quote_id, ssh_public_keys: keys, env });
      expect(res.statusCode, res.body).toBe(202);
      const jobId = res.json().job_id;
      expect(res.json()).toEqual({ job_id: jobId, state: 'RESERVED' });

      expect(await balance(renter)).toEqual({ available_micro: '9450000', held_micro: '550000', currency: 'USDC' });
      expect(await balanceOf(t.store.db, ledgerAccounts.hold(jobId, renter.accountId))).toBe(550_000n);

      const job = await getJob(t.app, renter, jobId);
      expect(job).toMatchObject({
        job_id: jobId,
        state: 'RESERVED',
        cumulative_charge_micro: '0',
        budget_version: '1',
        job_version: '1',
        machine_id: machine.machineId,
        fence: '1',
        rate_micro_per_hour: '550000',
        accepted_runtime_ms: '0',
        meter_started_at: null,
        last_meter_receipt_at: null,
        stopped_at: null,
        tier: 'container',
        gpu_model: 'NVIDIA GeForce RTX 4090',
        gpu_count: 2,
        funded_budget_micro: '550000',
        duration_limit_s: 3600,
        close_reason: null,
      });
      // Before the meter starts, funded_through is projected from now: the budget buys exactly the hour.
      expect(job.funded_through).toBe(new Date(t.clock.now().getTime() + 3_600_000).toISOString());

      const commands = await queuedCommands(t.ctx, machine.machineId);
      expect(commands.map((c) => c.kind)).toEqual(['launch_job']);
      const launch = commands[0]?.body as LaunchJobBody;
      expect(launch).toEqual({
        job_id: jobId,
        fence: '1',
        image_digest: customImage(),
        gpu_pci_addresses: ['00000000:01:00.0', '00000000:02:00.0'],
        env,
        ports: [],
        ssh_public_keys: keys,
        meter_interval_s: 30,
      });
      // The job holds both GPUs: another quote for one of them finds none free.
      expectError(
        await postQuote(t.app, renter, { offer_id: machine.offerId, gpu_count: 1, duration_limit_s: 60, image_digest: customImage() }),
        409,
        'GPUS_NOT_AVAILABLE',
      );
    });

    it('refuses a reservation the balance cannot cover, changing nothing', async () => {
      const { renter: poor, machine } = await fresh(100_000n);
      const quote = (
        await postQuote(t.app, poor, { offer_id: machine.offerId, gpu_count: 1, duration_limit_s: 3600, image_digest: customImage() })
      ).json();
      const res = await postJob(t.app, poor, { quote_id: quote.quote_id, ssh_public_keys: [sshPublicKey()] });
      expectError(res, 409, 'INSUFFICIENT_BALANCE');
      expect(await balance(poor)).toEqual({ available_micro: '100000', held_micro: '0', currency: 'USDC' });
      const jobs = (await t.app.inject({ method: 'GET', url: '/api/v1/jobs', headers: bearer(poor.apiKey) })).json();
      expect(jobs.items).toEqual([]);
      expect(await queuedCommands(t.ctx, machine.machineId)).toEqual([]);
      // The quote was not consumed: with more money it still reserves.
      await fund(t.ctx, poor.accountId, 1_000_000n);
      expect((await postJob(t.app, poor, { quote_id: quote.quote_id, ssh_public_keys: [sshPublicKey()] })).statusCode).toBe(202);
    });

    it('answers QUOTE_EXPIRED after 60 s, QUOTE_ALREADY_USED once used, 404 for a stranger, and replays the same job per key', async () => {
      const { renter: r, machine } = await fresh();
      const quoteOf = async () =>
        (await postQuote(t.app, r, { offer_id: machine.offerId, gpu_count: 1, duration_limit_s: 600, image_digest: customImage() })).json();
      const expiring = await quoteOf();
      await t.clock.advance(60_000);
      expectError(await postJob(t.app, r, { quote_id: expiring.quote_id, ssh_public_keys: [sshPublicKey()] }), 409, 'QUOTE_EXPIRED');
      await agentHeartbeat(t.ctx, machine.machineId);

      const quote = await quoteOf();
      expectError(await postJob(t.app, stranger, { quote_id: quote.quote_id, ssh_public_keys: [sshPublicKey()] }), 404, 'QUOTE_NOT_FOUND');
      expectError(await postJob(t.app, r, { quote_id: randomUUID(), ssh_public_keys: [sshPublicKey()] }), 404, 'QUOTE_NOT_FOUND');
      const key = randomUUID();
      const body = { quote_id: quote.quote_id, ssh_public_keys: [sshPublicKey()] };
      const first = await postJob(t.app, r, body, key);
      expect(first.statusCode).toBe(202);
      const replay = await postJob(t.app, r, body, key);
      expect(replay.statusCode).toBe(202);
      expect(replay.json().job_id).toBe(first.json().job_id);
      expectError(await postJob(t.app, r, body), 409, 'QUOTE_ALREADY_USED');
      // One hold only.
      expect((await balance(r)).held_micro).toBe('91666');
    });

    it('validates SSH keys and environment variables (422 naming the field)', async () => {
      const { renter: r, machine } = await fresh();
      const quote = (
        await postQuote(t.app, r, { offer_id: machine.offerId, gpu_count: 1, duration_limit_s: 600, image_digest: customImage() })
      ).json();
      const refuse = async (payload: Json, pattern: RegExp) => {
        const res = await postJob(t.app, r, { quote_id: quote.quote_id, ...payload });
        expectError(res, 422, 'VALIDATION_FAILED');
        expect(res.json().error.message).toMatch(pattern);
      };
      await refuse({ ssh_public_keys: [] }, /ssh_public_keys/);
      await refuse({ ssh_public_keys: ['hello'] }, /ssh_public_keys\/0/);
      await refuse({ ssh_public_keys: Array.from({ length: 17 }, () => sshPublicKey()) }, /ssh_public_keys/);
      await refuse({ ssh_public_keys: [sshPublicKey()], env: { '1BAD': 'x' } }, /env/);
      await refuse({ ssh_public_keys: [sshPublicKey()], env: { ARK_ENGINE_API_KEY: 'x' } }, /env\/ARK_ENGINE_API_KEY.*reserved/);
      await refuse(
        { ssh_public_keys: [sshPublicKey()], env: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, 'x'])) },
        /env/,
      );
      expect((await balance(r)).held_micro).toBe('0');
    });
  });

  describe('reads', () => {
    it("shows a job to its owner and admins only, and lists the caller's jobs newest first, paged", async () => {
      const { renter: r, machine } = await fresh();
      const first = await reserveJob(t.app, r, machine, { duration_limit_s: 60 });
      await t.clock.advance(1000);
      await agentHeartbeat(t.ctx, machine.machineId);
      const second = await reserveJob(t.app, r, machine, { duration_limit_s: 60 });
      expect((await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${first.jobId}`, headers: bearer(stranger.apiKey) })).statusCode).toBe(
        404,
      );
      expect(
        (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${first.jobId}`, headers: bearer(admin.sessionToken) })).statusCode,
      ).toBe(200);
      expect((await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${randomUUID()}`, headers: bearer(r.apiKey) })).statusCode).toBe(404);

      const page1 = (await t.app.inject({ method: 'GET', url: '/api/v1/jobs?limit=1', headers: bearer(r.apiKey) })).json();
      expect(page1.items.map((j: Json) => j.job_id)).toEqual([second.jobId]);
      expect(page1.next_cursor).toEqual(expect.any(String));
      const page2 = (
        await t.app.inject({
          method: 'GET',
          url: `/api/v1/jobs?limit=1&cursor=${encodeURIComponent(page1.next_cursor)}`,
          headers: bearer(r.apiKey),
        })
      ).json();
      expect(page2.items.map((j: Json) => j.job_id)).toEqual([first.jobId]);
      expect(page2.next_cursor).toBeNull();
      const starting = (await t.app.inject({ method: 'GET', url: '/api/v1/jobs?state=STARTING', headers: bearer(r.apiKey) })).json();
      expect(starting.items).toEqual([]);
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/jobs', headers: bearer(stranger.apiKey) })).json().items).toEqual([]);
    });
  });

  describe('access', () => {
    it('answers 403 before readiness, execution while RUNNING, retrieval after STOPPED for the window, 403 after; 404 to others', async () => {
      const { renter: r, machine } = await fresh();
      const { jobId } = await reserveJob(t.app, r, machine);
      const access = (account: SeededAccount) =>
        t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/access`, headers: bearer(account.apiKey) });
      expectError(await access(r), 403, 'JOB_ACCESS_UNAVAILABLE');
      const startedAt = await runJob(t, machine.machineId, jobId, readyAccess(2222));
      const running = await access(r);
      expect(running.statusCode, running.body).toBe(200);
      expect(running.json()).toEqual({
        mode: 'execution',
        endpoints: [
          { endpoint_id: 'ssh', kind: 'ssh', external_host: '127.0.0.1', external_port: 2222 },
          { endpoint_id: 'http-8080', kind: 'http', external_host: '127.0.0.1', external_port: 31080 },
        ],
        ssh_host_key_fingerprint: readyAccess().ssh_host_key_fingerprint,
        ssh_command: 'ssh -p 2222 root@127.0.0.1',
        expires_at: new Date(startedAt.getTime() + 3_600_000).toISOString(),
      });
      expectError(await access(stranger), 404, 'NOT_FOUND');
      // Admins see the job, but access is the renter's alone.
      expect(
        (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/access`, headers: bearer(admin.sessionToken) })).statusCode,
      ).toBe(404);

      expect((await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'done' })).json().state).toBe('STOPPING');
      expectError(await access(r), 403, 'JOB_ACCESS_UNAVAILABLE');
      await t.clock.advance(1000);
      await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'stopped', t.clock.now()));
      const stoppedAt = t.clock.now();
      const retrieval = await access(r);
      expect(retrieval.statusCode).toBe(200);
      expect(retrieval.json()).toEqual({
        mode: 'retrieval-read-only',
        endpoints: [{ endpoint_id: 'sftp-retrieval', kind: 'sftp-retrieval', external_host: '127.0.0.1', external_port: 2222 }],
        ssh_host_key_fingerprint: readyAccess().ssh_host_key_fingerprint,
        ssh_command: 'sftp -P 2222 root@127.0.0.1',
        expires_at: new Date(stoppedAt.getTime() + 600_000).toISOString(),
      });
      await t.clock.advance(600_000);
      expectError(await access(r), 403, 'JOB_ACCESS_UNAVAILABLE');
    });

    it('gives model-kind jobs their engine key in execution mode only, and prefers the address the agent reports', async () => {
      const { renter: r, machine } = await fresh();
      const ids = await importTestTemplates(t.ctx, [
        {
          kind: 'model',
          name: `llm-${randomUUID()}`,
          description: 'an OpenAI-compatible engine',
          vram_fit: { min_vram_bytes: '1' },
          runtimes: [{ backend: 'cuda', image_digest: customImage('f') }],
          spec: {
            ports: [{ container_port: 8000, protocol: 'http' }],
            environment: { THREADS: '4' },
            health_check: { port: 8000, path: '/health' },
            engine: { name: 'vllm', model: 'tiny', api_port: 8000 },
          },
        },
      ]);
      const templateId = Object.values(ids)[0] as string;
      const { jobId } = await reserveJob(t.app, r, machine, { template_id: templateId, image_digest: undefined });
      const launch = (await queuedCommands(t.ctx, machine.machineId))[0]?.body as LaunchJobBody;
      expect(launch.engine_api_key).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(launch).toMatchObject({
        image_digest: customImage('f'),
        ports: [{ container_port: 8000, protocol: 'http' }],
        health_check: { port: 8000, path: '/health' },
      });
      await runJob(t, machine.machineId, jobId, {
        ...readyAccess(2200),
        public_host: 'rig-7.example.net',
        ports: [{ container_port: 8000, host_port: 8000, protocol: 'http' }],
      });
      const view = (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/access`, headers: bearer(r.apiKey) })).json();
      expect(view.api_key).toBe(launch.engine_api_key);
      expect(view.ssh_command).toBe('ssh -p 2200 root@rig-7.example.net');
      expect(view.endpoints[1]).toEqual({
        endpoint_id: 'http-8000',
        kind: 'http',
        external_host: 'rig-7.example.net',
        external_port: 8000,
      });
      const job = await getJob(t.app, r, jobId);
      expect(job.template).toEqual({ template_id: templateId, name: expect.any(String), kind: 'model' });
      // Readiness proved the machine runs the template: it is now published.
      const catalog = (await t.app.inject({ method: 'GET', url: `/api/v1/templates/${templateId}` })).json();
      expect(catalog.published).toBe(true);
      await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'done' });
      await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'stopped', t.clock.now()));
      const retrieval = (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/access`, headers: bearer(r.apiKey) })).json();
      expect(retrieval.mode).toBe('retrieval-read-only');
      expect(retrieval.api_key).toBeUndefined();
    });
  });

  describe('stop', () => {
    it('moves RUNNING to STOPPING and queues stop_job; repeats answer STOPPING, then the terminal result', async () => {
      const { renter: r, machine } = await fresh();
      const { jobId } = await reserveJob(t.app, r, machine);
      await runJob(t, machine.machineId, jobId);
      const key = randomUUID();
      const stop = await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'finished' }, key);
      expect(stop.statusCode, stop.body).toBe(202);
      expect(stop.json()).toEqual({ job_id: jobId, state: 'STOPPING' });
      expect((await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'again' })).json()).toEqual({ job_id: jobId, state: 'STOPPING' });
      const commands = await queuedCommands(t.ctx, machine.machineId);
      expect(commands.map((c) => c.kind)).toEqual(['launch_job', 'stop_job']);
      expect(commands[1]?.body).toEqual({ job_id: jobId, fence: '1', reason: 'finished', retrieval_window_s: 600 });
      expect(await getJob(t.app, r, jobId)).toMatchObject({ state: 'STOPPING', close_reason: 'stopped_by_renter' });

      await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'stopped', t.clock.now()));
      expect((await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'x' })).json().state).toBe('STOPPED');
      // The same key replays the first answer.
      expect((await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'finished' }, key)).json().state).toBe('STOPPING');
      expect((await post(stranger, `/api/v1/jobs/${jobId}/stop`, { reason: 'x' })).statusCode).toBe(404);
      expectError(await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: '' }), 422, 'VALIDATION_FAILED');
    });

    it("lets an admin stop anyone's job, recorded as such", async () => {
      const { renter: r, machine } = await fresh();
      const { jobId } = await reserveJob(t.app, r, machine);
      await runJob(t, machine.machineId, jobId);
      const res = await post(admin, `/api/v1/jobs/${jobId}/stop`, { reason: 'abuse report' });
      expect(res.json()).toEqual({ job_id: jobId, state: 'STOPPING' });
      expect((await getJob(t.app, r, jobId)).close_reason).toBe('stopped_by_admin');
    });

    it('cancels a job before readiness and returns the whole hold once the machine cleaned up', async () => {
      const { renter: r, machine } = await fresh();
      const { jobId } = await reserveJob(t.app, r, machine);
      await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'accepted', t.clock.now()));
      expect((await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'changed my mind' })).json().state).toBe('STOPPING');
      const stopBody = (await queuedCommands(t.ctx, machine.machineId))[1]?.body as Json;
      expect(stopBody.retrieval_window_s).toBe(0);
      await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'stopped', t.clock.now()));
      expect((await getJob(t.app, r, jobId)).state).toBe('STOPPED');
      // No meter ran: no retrieval window, and the sweep cleans at once.
      expect((await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/access`, headers: bearer(r.apiKey) })).statusCode).toBe(403);
      await t.ctx.services.jobs.sweeps.runOnce(t.clock.now());
      expect((await getJob(t.app, r, jobId)).state).toBe('CLEANING');
      expect((await queuedCommands(t.ctx, machine.machineId)).map((c) => c.kind)).toEqual(['launch_job', 'stop_job', 'clean_job']);
      await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'cleaned', t.clock.now()));
      const job = await getJob(t.app, r, jobId);
      expect(job).toMatchObject({ state: 'CLOSED', cumulative_charge_micro: '0', meter_started_at: null });
      expect(await balance(r)).toEqual({ available_micro: '10000000', held_micro: '0', currency: 'USDC' });
      expect((await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'x' })).json().state).toBe('CLOSED');
    });

    it('refuses to stop a failed job (409 JOB_NOT_STOPPABLE)', async () => {
      const { renter: r, machine } = await fresh();
      const { jobId } = await reserveJob(t.app, r, machine);
      await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'failed', t.clock.now(), { detail: 'manifest unknown' }));
      expect(await getJob(t.app, r, jobId)).toMatchObject({ state: 'FAILED', close_reason: 'launch_failed' });
      expect(await balance(r)).toMatchObject({ available_micro: '10000000', held_micro: '0' });
      expectError(await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'x' }), 409, 'JOB_NOT_STOPPABLE');
      expect((await queuedCommands(t.ctx, machine.machineId)).map((c) => c.kind)).toEqual(['launch_job', 'clean_job']);
    });
  });

  describe('budget extension', () => {
    const extend = (account: SeededAccount, jobId: string, body: Json, key = randomUUID()) =>
      post(account, `/api/v1/jobs/${jobId}/budget-extension`, body, key);

    it('compare-and-sets the versions, holds the addition with one immutable amendment and bumps budget_version', async () => {
      const { renter: r, machine } = await fresh();
      const { jobId } = await reserveJob(t.app, r, machine, { duration_limit_s: 1800 });
      const startedAt = await runJob(t, machine.machineId, jobId);
      const job = await getJob(t.app, r, jobId);
      expect(job).toMatchObject({ job_version: '3', budget_version: '1', funded_budget_micro: '275000' });
      const body = {
        additional_budget_micro: '275000',
        new_duration_limit_s: 3600,
        expected_job_version: job.job_version,
        expected_budget_version: '1',
      };

      expectError(await extend(r, jobId, { ...body, expected_job_version: '2' }), 409, 'JOB_VERSION_MISMATCH');
      expectError(await extend(r, jobId, { ...body, expected_budget_version: '0' }), 409, 'BUDGET_VERSION_MISMATCH');
      expectError(await extend(r, jobId, { ...body, new_duration_limit_s: 600 }), 409, 'DURATION_LIMIT_DECREASE');
      expectError(await extend(r, jobId, { ...body, additional_budget_micro: '100000000' }), 409, 'INSUFFICIENT_BALANCE');
      expectError(await extend(stranger, jobId, body), 404, 'NOT_FOUND');

      const key = randomUUID();
      const res = await extend(r, jobId, body, key);
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toEqual({ job_id: jobId, budget_version: '2', funded_budget_micro: '550000' });
      expect((await extend(r, jobId, body, key)).json()).toEqual(res.json());
      expectError(await extend(r, jobId, body), 409, 'JOB_VERSION_MISMATCH');

      expect(await balance(r)).toEqual({ available_micro: '9450000', held_micro: '550000', currency: 'USDC' });
      const after = await getJob(t.app, r, jobId);
      expect(after).toMatchObject({
        budget_version: '2',
        job_version: '4',
        funded_budget_micro: '550000',
        duration_limit_s: 3600,
        rate_micro_per_hour: '550000',
      });
      expect(after.funded_through).toBe(new Date(startedAt.getTime() + 3_600_000).toISOString());
      const amendments = await amendmentsOf(t.store.db, jobId);
      expect(amendments).toHaveLength(1);
      expect(amendments[0]).toMatchObject({
        budget_version: 2n,
        additional_budget_micro: 275_000n,
        funded_budget_micro: 550_000n,
        previous_duration_limit_s: 1800n,
        new_duration_limit_s: 3600n,
      });
      // Immutable in the database itself.
      await expect(t.store.db.updateTable('job_budget_amendments').set({ additional_budget_micro: 1n }).execute()).rejects.toThrow(
        /immutable/,
      );

      // The seeded offer ends 30 days after enrollment: the host ceiling cannot be passed.
      expectError(
        await extend(r, jobId, {
          additional_budget_micro: '0',
          new_duration_limit_s: 30 * 86400,
          expected_job_version: '4',
          expected_budget_version: '2',
        }),
        409,
        'HOST_CEILING_EXCEEDED',
      );
      // An extension must change something: nothing added under the same limit is refused, naming the field, and
      // moves no version.
      const unchanged = await extend(r, jobId, {
        additional_budget_micro: '0',
        new_duration_limit_s: 3600,
        expected_job_version: '4',
        expected_budget_version: '2',
      });
      expectError(unchanged, 422, 'VALIDATION_FAILED');
      expect(unchanged.json().error.message).toMatch(/^body\/additional_budget_micro /);
      expect(await getJob(t.app, r, jobId)).toMatchObject({ budget_version: '2', job_version: '4', funded_budget_micro: '550000' });
      expect(await amendmentsOf(t.store.db, jobId)).toHaveLength(1);
      // Nothing added but a longer limit is an extension of the duration alone.
      const longer = await extend(r, jobId, {
        additional_budget_micro: '0',
        new_duration_limit_s: 4000,
        expected_job_version: '4',
        expected_budget_version: '2',
      });
      expect(longer.statusCode, longer.body).toBe(202);
      expect(longer.json()).toEqual({ job_id: jobId, budget_version: '3', funded_budget_micro: '550000' });
      expect(await balance(r)).toEqual({ available_micro: '9450000', held_micro: '550000', currency: 'USDC' });
      await post(r, `/api/v1/jobs/${jobId}/stop`, { reason: 'done' });
      expectError(
        await extend(r, jobId, {
          additional_budget_micro: '1',
          new_duration_limit_s: 3600,
          expected_job_version: '5',
          expected_budget_version: '2',
        }),
        409,
        'JOB_NOT_EXTENDABLE',
      );
    });
  });
});
