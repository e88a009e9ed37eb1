import { randomUUID } from 'node:crypto';
import type { LaunchJobBody } from '@ark/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { chargesFor } from '../../domain/metering/charges.js';
import { balanceOf, verifyLedger } from '../../store/ledger.js';
import { balancesByKind } from '../../store/ledger-summary.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import {
  agentHeartbeat,
  deliver,
  fund,
  getJob,
  jobStatus,
  type LiveMachine,
  liveMachine,
  meterReceipt,
  queuedCommands,
  readyAccess,
  reserveJob,
  runJob,
  subscribeWebhooks,
} from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;
const RATE = { machineRateMicroPerHour: 500_000n, platformFeeBps: 1000n };

describe.each(DIALECTS)('job lifecycle and metering on %s', (dialect) => {
  let t: TestApp<ManualClock>;

  beforeAll(async () => {
    t = await createTestApp(dialect, {
      configOverrides: { newHostMachineCap: 1000, retrievalWindowS: 300, jobReconcileTimeoutMs: 120_000, jobStartTimeoutMs: 600_000 },
    });
  });
  afterAll(async () => {
    await t.destroy();
  });
  afterEach(async () => {
    const verification = await verifyLedger(t.store);
    expect(verification.discrepancies).toEqual([]);
    expect(verification.ok).toBe(true);
  });

  const fresh = async (depositMicro = 10_000_000n): Promise<{ renter: SeededAccount; machine: LiveMachine }> => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, depositMicro);
    return { renter, machine: await liveMachine(t.ctx, t.app) };
  };
  const sweep = () => t.ctx.services.jobs.sweeps.runOnce(t.clock.now());
  /** The money of the renter's balance (its deposit history is the billing tests' concern). */
  const moneyOf = async (account: SeededAccount) => {
    // The money itself: the deposit and top-up histories that ride along are other suites' business.
    const {
      deposits: _deposits,
      top_ups: _topUps,
      credits: _credits,
      ...money
    } = (await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: bearer(account.apiKey) })).json();
    return money;
  };
  const events = async (account: SeededAccount, jobId: string, query = '') => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/events${query}`, headers: bearer(account.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { items: Json[]; next_cursor: string | null };
  };
  const allEvents = async (account: SeededAccount, jobId: string) => (await events(account, jobId, '?limit=100')).items;
  const at = (start: Date, ms: number) => new Date(start.getTime() + ms);
  // What the host earned: charges land as pending earnings (issue 24) and become payable after the maturity.
  const payable = async (host: SeededAccount) =>
    (await balanceOf(t.store.db, ledgerAccounts.pending(host.accountId))) +
    (await balanceOf(t.store.db, ledgerAccounts.payable(host.accountId)));
  // The fees over all their shards (one shard a charging transaction on Postgres: store/job-charges.ts).
  const fees = async () => (await balancesByKind(t.store.db)).get('fees') ?? 0n;

  it('runs a whole rental: receipts charge the ledger exactly, repeats count once, stop, retrieval, clean, close', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000' });
    const feesBefore = await fees();

    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'accepted', t.clock.now()));
    expect((await getJob(t.app, renter, jobId)).state).toBe('STARTING');
    for (const pct of [0, 3, 5, 10, 12, 25, 100, 100])
      await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'pulling', t.clock.now(), { progress_pct: pct }));
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'starting', t.clock.now()));
    await t.clock.advance(1500);
    const start = t.clock.now();
    await deliver(
      t.ctx,
      machine.machineId,
      jobStatus(jobId, 1, 'ready', start, { access: readyAccess(), evidence: { container_running: true, health: 'http 200' } }),
    );
    const running = await getJob(t.app, renter, jobId);
    expect(running).toMatchObject({
      state: 'RUNNING',
      meter_started_at: start.toISOString(),
      last_meter_receipt_at: null,
      accepted_runtime_ms: '0',
    });
    expect(running.funded_through).toBe(at(start, 3_600_000).toISOString());

    // seq 1: 30 s.
    await t.clock.advance(30_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 30_000)));
    let expected = chargesFor(RATE, 550_000n, 30_000n);
    expect(expected).toEqual({ cumulativeMicro: 4583n, hostMicro: 4166n, feeMicro: 417n });
    expect(await getJob(t.app, renter, jobId)).toMatchObject({
      accepted_runtime_ms: '30000',
      cumulative_charge_micro: '4583',
      last_meter_receipt_at: t.clock.now().toISOString(),
    });
    expect(await payable(machine.host)).toBe(4166n);
    // All of it pending for now, none payable before the maturity (ARK_EARNINGS_MATURITY_S, 24 h by default).
    expect(await balanceOf(t.store.db, ledgerAccounts.pending(machine.host.accountId))).toBe(4166n);
    expect(await balanceOf(t.store.db, ledgerAccounts.payable(machine.host.accountId))).toBe(0n);
    expect((await fees()) - feesBefore).toBe(417n);

    // The same receipt again after an agent restart (a new message id): acknowledged, not counted.
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 30_000)));
    // A stale fence and a gap in the sequence: refused, with events.
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 0, 2, at(start, 30_000), at(start, 60_000)));
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 3, at(start, 30_000), at(start, 60_000)));
    expect((await getJob(t.app, renter, jobId)).accepted_runtime_ms).toBe('30000');

    await t.clock.advance(30_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 2, at(start, 30_000), at(start, 60_000)));
    expected = chargesFor(RATE, 550_000n, 60_000n);
    expect(await getJob(t.app, renter, jobId)).toMatchObject({
      accepted_runtime_ms: '60000',
      cumulative_charge_micro: expected.cumulativeMicro.toString(),
    });
    expect(await payable(machine.host)).toBe(expected.hostMicro);
    expect((await fees()) - feesBefore).toBe(expected.feeMicro);

    // Stop: the final receipt is taken while STOPPING, then the machine confirms.
    const stopped = await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${jobId}/stop`,
      headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() },
      payload: { reason: 'done' },
    });
    expect(stopped.json().state).toBe('STOPPING');
    await t.clock.advance(10_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 3, at(start, 60_000), at(start, 70_000), 10_000, true));
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'stopped', t.clock.now(), { exit_code: 0 }));
    const final = chargesFor(RATE, 550_000n, 70_000n);
    expect(await getJob(t.app, renter, jobId)).toMatchObject({
      state: 'STOPPED',
      stopped_at: t.clock.now().toISOString(),
      accepted_runtime_ms: '70000',
      cumulative_charge_micro: final.cumulativeMicro.toString(),
    });
    // The unspent budget is back at STOPPED, in the same transaction, not an hour later at CLOSED (issue 22).
    const backAtStop = { available_micro: (10_000_000n - final.cumulativeMicro).toString(), held_micro: '0', currency: 'USDC' };
    expect(await moneyOf(renter)).toEqual(backAtStop);
    expect(await balanceOf(t.store.db, ledgerAccounts.hold(jobId, renter.accountId))).toBe(0n);
    const releasedAtStop = (await allEvents(renter, jobId)).filter((e) => e.kind === 'hold_released');
    expect(releasedAtStop.map((e) => e.data.released_micro)).toEqual([(550_000n - final.cumulativeMicro).toString()]);
    // Late receipts change nothing: refused, so nothing is charged past the release.
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 4, at(start, 70_000), at(start, 75_000)));
    expect((await getJob(t.app, renter, jobId)).accepted_runtime_ms).toBe('70000');
    expect(await moneyOf(renter)).toEqual(backAtStop);

    // The retrieval window (300 s) ends: CLEANING and clean_job; the agent's cleaned closes and releases the rest.
    await t.clock.advance(299_000);
    await agentHeartbeat(t.ctx, machine.machineId);
    await sweep();
    expect((await getJob(t.app, renter, jobId)).state).toBe('STOPPED');
    await t.clock.advance(1000);
    await sweep();
    expect((await getJob(t.app, renter, jobId)).state).toBe('CLEANING');
    const commands = await queuedCommands(t.ctx, machine.machineId);
    expect(commands.map((c) => c.kind)).toEqual(['launch_job', 'stop_job', 'clean_job']);
    expect(commands[2]?.body).toEqual({ job_id: jobId, fence: '1' });
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'cleaned', t.clock.now()));
    const closed = await getJob(t.app, renter, jobId);
    expect(closed).toMatchObject({
      state: 'CLOSED',
      close_reason: 'stopped_by_renter',
      cumulative_charge_micro: final.cumulativeMicro.toString(),
    });

    // The host got exactly its share, the platform its fee, the renter the rest back.
    expect(await payable(machine.host)).toBe(final.hostMicro);
    expect((await fees()) - feesBefore).toBe(final.feeMicro);
    expect(final.hostMicro + final.feeMicro).toBe(final.cumulativeMicro);
    const balance = await moneyOf(renter);
    expect(balance).toEqual({ available_micro: (10_000_000n - final.cumulativeMicro).toString(), held_micro: '0', currency: 'USDC' });
    expect(await balanceOf(t.store.db, ledgerAccounts.hold(jobId, renter.accountId))).toBe(0n);

    // Every transition, pull progress (coalesced) and refusal is a sequenced event.
    const list = await allEvents(renter, jobId);
    expect(list.map((e) => e.seq)).toEqual(list.map((_, i) => i + 1));
    expect(list.filter((e) => e.kind === 'pull_progress').map((e) => e.data.progress_pct)).toEqual([0, 10, 25, 100]);
    expect(list.filter((e) => e.kind === 'receipt_refused').map((e) => e.data.reason)).toEqual(['stale_fence', 'seq_gap', 'not_metering']);
    expect(list.filter((e) => e.kind === 'state_changed').map((e) => e.data.to)).toEqual([
      'STARTING',
      'RUNNING',
      'STOPPING',
      'STOPPED',
      'CLEANING',
      'CLOSED',
    ]);
    // Released once, at STOPPED: closing adds no second release.
    expect(list.filter((e) => e.kind === 'hold_released')).toEqual(releasedAtStop);
  });

  it('pages events by seq with an opaque cursor, for the owner and admins only', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine);
    await runJob(t, machine.machineId, jobId);
    const first = await events(renter, jobId, '?limit=2');
    expect(first.items.map((e) => e.seq)).toEqual([1, 2]);
    expect(first.items[0]).toMatchObject({
      kind: 'reserved',
      at: expect.any(String),
      message: expect.any(String),
      data: expect.any(Object),
    });
    const second = await events(renter, jobId, `?limit=2&cursor=${encodeURIComponent(first.next_cursor as string)}`);
    expect(second.items[0]?.seq).toBe(3);
    const admin = await seedAccount(t.ctx, { role: 'admin' });
    expect(
      (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/events`, headers: bearer(admin.sessionToken) })).statusCode,
    ).toBe(200);
    const stranger = await seedAccount(t.ctx);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/events`, headers: bearer(stranger.apiKey) })).statusCode).toBe(
      404,
    );
    expect(
      (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/events?cursor=forged.cursor`, headers: bearer(renter.apiKey) }))
        .statusCode,
    ).toBe(422);
  });

  it('stops the job itself when the budget is spent, never charging past it', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '5000' });
    const start = await runJob(t, machine.machineId, jobId);
    await t.clock.advance(60_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 60_000)));
    const job = await getJob(t.app, renter, jobId);
    expect(job).toMatchObject({
      state: 'STOPPING',
      close_reason: 'budget_exhausted',
      cumulative_charge_micro: '5000',
      accepted_runtime_ms: '60000',
    });
    expect(await payable(machine.host)).toBe(4545n);
    const commands = await queuedCommands(t.ctx, machine.machineId);
    expect(commands.map((c) => c.kind)).toEqual(['launch_job', 'stop_job']);
    expect((commands[1]?.body as Json | undefined)?.reason).toBe('budget_exhausted');
    await t.clock.advance(5000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 2, at(start, 60_000), at(start, 65_000), 5000, true));
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ cumulative_charge_micro: '5000', accepted_runtime_ms: '65000' });
    expect(await balanceOf(t.store.db, ledgerAccounts.hold(jobId, renter.accountId))).toBe(0n);
    const kinds = (await allEvents(renter, jobId)).filter((e) => e.kind === 'state_changed').map((e) => e.data.reason);
    expect(kinds).toContain('budget_exhausted');
  });

  it('stops the job when the duration limit passes (the sweep), and never counts runtime past it', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine, { duration_limit_s: 60, budget_micro: '1000000' });
    const start = await runJob(t, machine.machineId, jobId);
    expect((await getJob(t.app, renter, jobId)).funded_through).toBe(at(start, 60_000).toISOString());
    await t.clock.advance(59_000);
    await agentHeartbeat(t.ctx, machine.machineId);
    await sweep();
    expect((await getJob(t.app, renter, jobId)).state).toBe('RUNNING');
    await t.clock.advance(1000);
    await sweep();
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'STOPPING', close_reason: 'duration_limit' });
    await t.clock.advance(4000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 64_000), 64_000, true));
    expect((await getJob(t.app, renter, jobId)).accepted_runtime_ms).toBe('60000');
    const partly = (await allEvents(renter, jobId)).find((e) => e.kind === 'receipt_partly_counted');
    expect(partly?.data).toMatchObject({ counted_ms: '60000', uncounted_ms: '4000' });
  });

  it('moves a job whose container exited to STOPPING, with agent details sanitized in its events', async () => {
    const { renter, machine } = await fresh();
    const secret = 'tr0ub4dor&3-horse';
    const { jobId } = await reserveJob(t.app, renter, machine, {}, { env: { DB_PASSWORD_VALUE: secret } });
    await runJob(t, machine.machineId, jobId);
    const detail = `boom\x1b[31m!\x00 connecting with ${secret}\nAuthorization: Bearer sk-abcdefghijklmnopqrstu and ark_abcdefghijklmnop\x07`;
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'exited', t.clock.now(), { exit_code: 3, detail }));
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'STOPPING', close_reason: 'container_exited' });
    expect((await queuedCommands(t.ctx, machine.machineId)).map((c) => c.kind)).toEqual(['launch_job', 'stop_job']);
    const exited = (await allEvents(renter, jobId)).find((e) => e.kind === 'container_exited');
    const text = JSON.stringify(exited);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('sk-abcdefghijklmnopqrstu');
    expect(text).not.toContain('ark_abcdefghijklmnop');
    expect(text).not.toContain('\\u001b');
    expect(text).not.toContain('\\u0000');
    expect(exited?.data).toMatchObject({ exit_code: 3 });
    expect(exited?.data.detail).toContain('[REDACTED]');
    expect(exited?.data.detail).toContain('boom!');
  });

  it('refuses a stale fence on status messages, and ignores messages about the job from another machine', async () => {
    const { renter, machine } = await fresh();
    const other = await liveMachine(t.ctx, t.app);
    const { jobId } = await reserveJob(t.app, renter, machine);
    await deliver(t.ctx, other.machineId, jobStatus(jobId, 1, 'accepted', t.clock.now()));
    await deliver(t.ctx, other.machineId, meterReceipt(jobId, 1, 1, t.clock.now(), t.clock.now()));
    expect((await getJob(t.app, renter, jobId)).state).toBe('RESERVED');
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 0, 'accepted', t.clock.now()));
    expect((await getJob(t.app, renter, jobId)).state).toBe('RESERVED');
    const refused = (await allEvents(renter, jobId)).filter((e) => e.kind === 'status_refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]?.data).toMatchObject({ status: 'accepted', fence: '0', current_fence: '1' });
  });

  it('moves a running job of a silent machine to RECONCILING and back when its heartbeat lists the container, with a new fence', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine);
    const start = await runJob(t, machine.machineId, jobId);
    await t.clock.advance(30_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 30_000)));
    await agentHeartbeat(t.ctx, machine.machineId);
    const lastHeartbeat = t.clock.now();

    // Silent for longer than the grace (3 heartbeat intervals = 45 s).
    await t.clock.advance(44_000);
    await sweep();
    expect((await getJob(t.app, renter, jobId)).state).toBe('RUNNING');
    await t.clock.advance(2000);
    await sweep();
    const reconciling = await getJob(t.app, renter, jobId);
    expect(reconciling).toMatchObject({ state: 'RECONCILING', fence: '1' });
    // No receipts for the gap; no budget extension while reconciling.
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 2, at(start, 30_000), at(start, 60_000)));
    expect((await getJob(t.app, renter, jobId)).accepted_runtime_ms).toBe('30000');
    const extension = await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${jobId}/budget-extension`,
      headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        additional_budget_micro: '1',
        new_duration_limit_s: 3600,
        expected_job_version: reconciling.job_version,
        expected_budget_version: '1',
      },
    });
    expect(extension.json().error.code).toBe('JOB_NOT_EXTENDABLE');

    // The agent comes back listing the container as running under the job's fence.
    await t.clock.advance(20_000);
    const back = t.clock.now();
    await agentHeartbeat(t.ctx, machine.machineId, [{ job_id: jobId, fence: '1', container_state: 'running' }]);
    const returned = await getJob(t.app, renter, jobId);
    expect(returned).toMatchObject({ state: 'RUNNING', fence: '2' });
    expect(BigInt(returned.job_version)).toBeGreaterThan(BigInt(reconciling.job_version));
    const commands = await queuedCommands(t.ctx, machine.machineId);
    expect(commands.map((c) => c.kind)).toEqual(['launch_job', 'launch_job']);
    const relaunch = commands[1]?.body as LaunchJobBody;
    expect(relaunch.fence).toBe('2');
    expect({ ...relaunch, fence: '1' }).toEqual(commands[0]?.body);

    // The old session's receipts are stale; the new one's first receipt counts only what ran after the return.
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 2, at(start, 30_000), at(start, 60_000)));
    await t.clock.advance(30_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 2, 1, at(start, 30_000), t.clock.now()));
    const after = await getJob(t.app, renter, jobId);
    expect(after.accepted_runtime_ms).toBe(String(30_000 + (t.clock.now().getTime() - back.getTime())));
    expect(after.cumulative_charge_micro).toBe(
      chargesFor(
        RATE,
        BigInt((await getJob(t.app, renter, jobId)).funded_budget_micro),
        BigInt(after.accepted_runtime_ms),
      ).cumulativeMicro.toString(),
    );
    const reasons = (await allEvents(renter, jobId)).filter((e) => e.kind === 'receipt_refused').map((e) => e.data.reason);
    expect(reasons).toEqual(['not_metering', 'stale_fence']);
    expect(lastHeartbeat.getTime()).toBeLessThan(back.getTime());
  });

  it('brings a reconciling job back on re-announced readiness, but not on a heartbeat with another fence or state', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine, {}, { env: { SECRET_VALUE: 'correct-horse-battery' } });
    await runJob(t, machine.machineId, jobId);
    await t.clock.advance(46_000);
    await sweep();
    expect((await getJob(t.app, renter, jobId)).state).toBe('RECONCILING');
    await agentHeartbeat(t.ctx, machine.machineId, [{ job_id: jobId, fence: '0', container_state: 'running' }]);
    await agentHeartbeat(t.ctx, machine.machineId, [{ job_id: jobId, fence: '1', container_state: 'exited' }]);
    expect((await getJob(t.app, renter, jobId)).state).toBe('RECONCILING');
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'ready', t.clock.now(), { access: readyAccess(2345) }));
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'RUNNING', fence: '2' });
    const access = (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/access`, headers: bearer(renter.apiKey) })).json();
    expect(access.endpoints[0].external_port).toBe(2345);
    // A failure report under the new fence fails the job; its detail never shows the renter's secret.
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 2, 'failed', t.clock.now(), { detail: 'crashed with correct-horse-battery' }));
    const failed = (await allEvents(renter, jobId)).find((e) => e.kind === 'state_changed' && e.data.to === 'FAILED');
    expect(failed?.data.detail).toBe('crashed with [REDACTED]');
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'FAILED', close_reason: 'job_failed' });
  });

  it('fails a job that stays RECONCILING past the timeout, releasing the unspent hold and crediting the renter once', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000' });
    // Both parties listen for job.credited (an endpoint row: its deliveries are not under test here, its outbox is).
    for (const account of [renter, machine.host]) await subscribeWebhooks(t.ctx, account.accountId, ['job.credited']);
    const start = await runJob(t, machine.machineId, jobId);
    // The last heartbeat that saw the job's container running, 20 s into the 30 s the receipt covers.
    await t.clock.advance(20_000);
    await agentHeartbeat(t.ctx, machine.machineId, [{ job_id: jobId, fence: '1', container_state: 'running' }]);
    const healthyAt = t.clock.now();
    await t.clock.advance(10_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 30_000)));
    const pendingBefore = await balanceOf(t.store.db, ledgerAccounts.pending(machine.host.accountId));
    await t.clock.advance(46_000);
    await sweep();
    expect((await getJob(t.app, renter, jobId)).state).toBe('RECONCILING');
    await t.clock.advance(119_000);
    await sweep();
    expect((await getJob(t.app, renter, jobId)).state).toBe('RECONCILING');
    await t.clock.advance(2000);
    await sweep();
    const failed = await getJob(t.app, renter, jobId);
    expect(failed).toMatchObject({ state: 'FAILED', close_reason: 'agent_lost', cumulative_charge_micro: '4583' });
    // The automatic credit (issue 24 item 3): the 10 s charged after the last healthy heartbeat come back, the host's
    // share from its pending earnings, the fee from the platform's fees.
    const all = chargesFor(RATE, 550_000n, 30_000n);
    const healthy = chargesFor(RATE, 550_000n, 20_000n);
    const creditHost = all.hostMicro - healthy.hostMicro;
    const creditTotal = all.cumulativeMicro - healthy.cumulativeMicro;
    expect(creditTotal).toBeGreaterThan(0n);
    const balance = await moneyOf(renter);
    expect(balance).toEqual({ available_micro: String(10_000_000n - 4583n + creditTotal), held_micro: '0', currency: 'USDC' });
    expect(await balanceOf(t.store.db, ledgerAccounts.pending(machine.host.accountId))).toBe(pendingBefore - creditHost);
    const credited = (await allEvents(renter, jobId)).filter((e) => e.kind === 'job_credited');
    expect(credited).toHaveLength(1);
    expect(credited[0]?.data).toMatchObject({
      reason: 'agent_lost',
      credit_micro: creditTotal.toString(),
      runtime_ms: '10000',
      healthy_at: healthyAt.toISOString(),
      from_host_pending_micro: creditHost.toString(),
      from_host_payable_micro: '0',
      from_platform_micro: (creditTotal - creditHost).toString(),
    });
    // A job.credited webhook for each party, written with the credit.
    const hooks = await t.store.db
      .selectFrom('webhook_events')
      .select(['account_id', 'payload'])
      .where('type', '=', 'job.credited')
      .execute();
    const mine = hooks.filter((h) => JSON.parse(h.payload).data.job_id === jobId);
    expect(mine.map((h) => h.account_id).sort()).toEqual([renter.accountId, machine.host.accountId].sort());
    expect(JSON.parse(mine[0]?.payload ?? '{}').data).toMatchObject({ credit_micro: creditTotal.toString(), reason: 'agent_lost' });
    // A line in both parties' histories.
    const line = { job_id: jobId, reason: 'agent_lost', credit_micro: creditTotal.toString(), from_host_micro: creditHost.toString() };
    const renterView = await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: bearer(renter.apiKey) });
    expect(renterView.json().credits).toEqual([{ ...line, healthy_at: healthyAt.toISOString(), at: t.clock.now().toISOString() }]);
    const hostView = await t.app.inject({ method: 'GET', url: '/api/v1/hosts/earnings', headers: bearer(machine.host.apiKey) });
    expect(hostView.json().credits).toContainEqual(expect.objectContaining(line));
    expect((await queuedCommands(t.ctx, machine.machineId)).map((c) => c.kind)).toEqual(['launch_job', 'clean_job']);
    // A late heartbeat listing the container changes nothing now, and more sweeps credit nothing more.
    await agentHeartbeat(t.ctx, machine.machineId, [{ job_id: jobId, fence: '1', container_state: 'running' }]);
    await t.clock.advance(60_000);
    await sweep();
    expect((await getJob(t.app, renter, jobId)).state).toBe('FAILED');
    expect(await moneyOf(renter)).toEqual(balance);
    expect((await allEvents(renter, jobId)).filter((e) => e.kind === 'job_credited')).toHaveLength(1);
    expect(await verifyLedger(t.store)).toMatchObject({ ok: true, discrepancies: [] });
  });

  it('fails waiting jobs and closes stopping ones when their machine stays silent past grace + timeout', async () => {
    const { renter, machine } = await fresh();
    const waiting = await reserveJob(t.app, renter, machine, { gpu_count: 1 });
    const stopping = await reserveJob(t.app, renter, machine, { gpu_count: 1 });
    await runJob(t, machine.machineId, stopping.jobId);
    await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${stopping.jobId}/stop`,
      headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() },
      payload: { reason: 'done' },
    });
    await t.clock.advance(162_000);
    await sweep();
    expect((await getJob(t.app, renter, waiting.jobId)).state).toBe('RESERVED');
    await t.clock.advance(5000);
    await sweep();
    expect(await getJob(t.app, renter, waiting.jobId)).toMatchObject({ state: 'FAILED', close_reason: 'agent_lost' });
    expect(await getJob(t.app, renter, stopping.jobId)).toMatchObject({ state: 'CLOSED', close_reason: 'stopped_by_renter' });
    const balance = await moneyOf(renter);
    expect(balance).toEqual({ available_micro: '10000000', held_micro: '0', currency: 'USDC' });
  });

  it('cancels a job that does not become ready within the start timeout', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine);
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'accepted', t.clock.now()));
    for (let i = 0; i < 20; i++) {
      await t.clock.advance(30_000);
      await agentHeartbeat(t.ctx, machine.machineId);
      await sweep();
    }
    expect((await getJob(t.app, renter, jobId)).state).toBe('STARTING');
    await t.clock.advance(1000);
    await sweep();
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'STOPPING', close_reason: 'start_timeout' });
    // Readiness that races the cancellation does not start the meter.
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'ready', t.clock.now(), { access: readyAccess() }));
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'STOPPING', meter_started_at: null });
  });

  it('fails a running job whose container vanished, keeping what was charged and releasing the rest', async () => {
    const { renter, machine } = await fresh();
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000' });
    const start = await runJob(t, machine.machineId, jobId);
    await t.clock.advance(30_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 30_000)));
    await deliver(
      t.ctx,
      machine.machineId,
      jobStatus(jobId, 1, 'failed', t.clock.now(), { detail: 'the container disappeared while the job ran' }),
    );
    expect(await getJob(t.app, renter, jobId)).toMatchObject({
      state: 'FAILED',
      close_reason: 'job_failed',
      cumulative_charge_micro: '4583',
    });
    expect(await balanceOf(t.store.db, ledgerAccounts.hold(jobId, renter.accountId))).toBe(0n);
    // The whole metered period ended after the machine's last heartbeat (at the job's start): all of it comes back,
    // the host's share out of its pending earnings (issue 24 item 3).
    expect(await payable(machine.host)).toBe(0n);
    expect(await moneyOf(renter)).toEqual({ available_micro: '10000000', held_micro: '0', currency: 'USDC' });
    expect((await allEvents(renter, jobId)).filter((e) => e.kind === 'job_credited')).toHaveLength(1);
  });
});
