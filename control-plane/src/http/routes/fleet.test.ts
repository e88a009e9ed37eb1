import { randomUUID } from 'node:crypto';
import { ErrorEnvelope, Fleet, JOB_STATES } from '@ark/shared';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { enrollDirect, sampleManifest, sendHeartbeat } from '../../testing/hosting.js';
import { agentHeartbeat, deliver, fund, jobStatus, type LiveMachine, liveMachine, reserveJob, runJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

// The operator's fleet read (GET /api/v1/admin/fleet) over a fleet brought in through the public API: machines
// enrolled and heard from through the channel's handlers, offers listed at go-live, jobs quoted, reserved and moved
// by agent reports. Every count against a hand computation; liveness grace 45 s (3 x 15 s).

type Json = Record<string, any>;
const fleetSchema = TypeCompiler.Compile(Fleet);
const envelopeSchema = TypeCompiler.Compile(ErrorEnvelope);
const S = 1000;

const manifestOf = (gpus: number) =>
  sampleManifest({
    gpus: Array.from({ length: gpus }, (_, i) => ({
      pci_address: `00000000:0${i + 1}:00.0`,
      model: 'NVIDIA GeForce RTX 4090',
      vram_bytes: '25757220864',
    })),
  });

const zeroJobs = () => Object.fromEntries(JOB_STATES.map((s) => [s, 0]));

describe.each(DIALECTS)('the fleet on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let admin: SeededAccount;
  let renter: SeededAccount;
  let a: LiveMachine; // live, 2 GPUs, listed, heard from lately: online
  let b: LiveMachine; // live, 4 GPUs, listed, silent past the grace: offline
  let runningOnB: string;

  const read = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/admin/fleet', headers: bearer(token) });
  const fleet = async (): Promise<Json> => {
    const res = await read(admin.sessionToken);
    expect(res.statusCode, res.body).toBe(200);
    expect(fleetSchema.Check(res.json()), res.body).toBe(true);
    return res.json();
  };
  const stateOf = async (jobId: string) =>
    (await t.store.db.selectFrom('jobs').select('state').where('id', '=', jobId).executeTakeFirstOrThrow()).state;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { heartbeatIntervalMs: 15 * S } });
    admin = await seedAccount(t.ctx, { role: 'admin' });
    renter = await seedAccount(t.ctx, { scopes: ['renter'] });
    await fund(t.ctx, renter.accountId, 100_000_000n);
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('an empty fleet: zero everywhere, every state present', async () => {
    const body = await fleet();
    expect(body).toEqual({
      as_of: t.clock.now().toISOString(),
      machines: { total: 0, online: 0, by_state: { waiting: 0, live: 0, failed: 0, off: 0 } },
      gpus: { total: 0, listed: 0, allocated: 0 },
      jobs: { by_state: zeroJobs(), active: 0 },
    });
    expect(Object.keys(body.jobs.by_state).sort()).toEqual([...JOB_STATES].sort());
  });

  it('counts machines online and per state, GPUs listed and allocated, jobs per state', async () => {
    a = await liveMachine(t.ctx, t.app, { manifest: manifestOf(2) });
    b = await liveMachine(t.ctx, t.app, { manifest: manifestOf(4) });
    // Off (go-live not asked), 1 GPU, never heard from; waiting, 1 GPU, never heard from; failed (an unhealthy first
    // heartbeat), 3 GPUs. None of their seeded offers is listed.
    const offHost = await seedAccount(t.ctx, { role: 'host' });
    await enrollDirect(t.app, offHost, { goLive: false, manifest: manifestOf(1) });
    await enrollDirect(t.app, offHost, { manifest: manifestOf(1) });
    const failed = await enrollDirect(t.app, offHost, { manifest: manifestOf(3) });
    await sendHeartbeat(t.ctx, failed, false, ['nvidia-smi failed']);

    // A: one job reserved (1 GPU) and one that failed to launch (1 GPU). B: one job running on 2 GPUs.
    const reserved = (await reserveJob(t.app, renter, a)).jobId;
    const launchFailed = (await reserveJob(t.app, renter, a)).jobId;
    await deliver(t.ctx, a.machineId, jobStatus(launchFailed, 1, 'failed', t.clock.now(), { detail: 'image pull failed' }));
    runningOnB = (await reserveJob(t.app, renter, b, { gpu_count: 2 })).jobId;
    await runJob(t, b.machineId, runningOnB);
    expect([await stateOf(reserved), await stateOf(launchFailed), await stateOf(runningOnB)]).toEqual(['RESERVED', 'FAILED', 'RUNNING']);

    // 30 s on A and the failed machine beat again (A's plain heartbeat through the write-behind buffer); 20 s later B's
    // last heartbeat is past the 45 s grace and theirs are not.
    await t.clock.advance(30 * S);
    await agentHeartbeat(t.ctx, a.machineId);
    await t.ctx.services.hosting.heartbeats.flush();
    await sendHeartbeat(t.ctx, failed, false, ['nvidia-smi failed']);
    await t.clock.advance(20 * S);

    expect(await fleet()).toEqual({
      as_of: t.clock.now().toISOString(),
      machines: { total: 5, online: 2, by_state: { waiting: 1, live: 2, failed: 1, off: 1 } },
      gpus: { total: 2 + 4 + 1 + 1 + 3, listed: 2 + 4, allocated: 1 + 2 },
      jobs: { by_state: { ...zeroJobs(), RESERVED: 1, RUNNING: 1, FAILED: 1 }, active: 2 },
    });
  });

  it('a stopped job is still active but holds no GPU; a machine taken off go-live stops counting as listed', async () => {
    await deliver(t.ctx, b.machineId, jobStatus(runningOnB, 1, 'stopped', t.clock.now(), { exit_code: 0 }));
    expect(await stateOf(runningOnB)).toBe('STOPPED');
    // B's host turns go-live off: out of the listing at once.
    const off = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${b.machineId}/go-live`,
      headers: { ...bearer(b.host.apiKey), 'idempotency-key': randomUUID() },
      payload: { go_live: false },
    });
    expect(off.statusCode, off.body).toBe(200);

    const body = await fleet();
    expect(body.machines).toEqual({ total: 5, online: 2, by_state: { waiting: 1, live: 1, failed: 1, off: 2 } });
    expect(body.gpus).toEqual({ total: 11, listed: 2, allocated: 1 });
    expect(body.jobs).toEqual({ by_state: { ...zeroJobs(), RESERVED: 1, STOPPED: 1, FAILED: 1 }, active: 2 });
  });

  it('answers 403 ADMIN_SESSION_REQUIRED to a renter, a host and an admin’s API key; 401 without a credential', async () => {
    for (const token of [renter.sessionToken, renter.apiKey, a.host.sessionToken, admin.apiKey]) {
      const res = await read(token);
      expect(res.statusCode, res.body).toBe(403);
      expect(envelopeSchema.Check(res.json()), res.body).toBe(true);
      expect(res.json().error.code).toBe('ADMIN_SESSION_REQUIRED');
    }
    const anonymous = await t.app.inject({ method: 'GET', url: '/api/v1/admin/fleet' });
    expect(anonymous.statusCode, anonymous.body).toBe(401);
    expect(anonymous.json().error.code).toBe('UNAUTHENTICATED');
  });
});
