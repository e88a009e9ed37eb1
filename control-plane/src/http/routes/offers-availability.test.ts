// What offer search says about a machine's availability now (issue 25, item 4): a machine rented out right now is
// listed `unavailable` (contract part 3's readiness values: ready, provisioning, unavailable), never `ready`, by the
// API and so by `ark offers search`, the console and MCP alike; quoting it is refused, as search said.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { runArk } from '../../testing/cli.js';
import { sampleManifest } from '../../testing/hosting.js';
import { randomUUID } from 'node:crypto';
import { customImage, deliver, fund, getJob, jobStatus, liveMachine, postQuote, reserveJob, runJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;

describe.each(DIALECTS)('offer availability on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let renter: SeededAccount;
  let baseUrl: string;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 100 } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    baseUrl = `http://127.0.0.1:${address.port}`;
    renter = await seedAccount(t.ctx, { scopes: ['renter'] });
    await fund(t.ctx, renter.accountId, 1_000_000_000n);
  });
  afterAll(async () => {
    await t?.destroy();
  });

  const readinessOf = async (offerId: string): Promise<string | undefined> => {
    const listed = await t.app.inject({ method: 'GET', url: '/api/v1/offers?limit=100', headers: bearer(renter.apiKey) });
    expect(listed.statusCode, listed.body).toBe(200);
    return (listed.json().items as Json[]).find((o) => o.offer_id === offerId)?.readiness;
  };
  const quote = (offerId: string, gpuCount = 1) =>
    postQuote(t.app, renter, { offer_id: offerId, gpu_count: gpuCount, duration_limit_s: 3600, image_digest: customImage() });
  /** `ark offers search`: its --json items, and its table's READY cell for the offer. */
  const cliSearch = async (offerId: string) => {
    const target = { baseUrl, apiKey: renter.apiKey };
    const json = JSON.parse(await runArk(['offers', 'search', '--limit', '100', '--json'], target));
    const table = await runArk(['offers', 'search', '--limit', '100'], target);
    const row = table.split('\n').find((line) => line.includes(offerId));
    return { item: (json.items as Json[]).find((o) => o.offer_id === offerId), row };
  };

  it('a machine with one GPU, rented: unavailable in the API and `ark offers search`, and quoting it is refused', async () => {
    const gpu = sampleManifest().gpus.slice(0, 1);
    const machine = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: gpu }) });
    expect(await readinessOf(machine.offerId)).toBe('ready');
    expect((await cliSearch(machine.offerId)).item?.readiness).toBe('ready');

    // Reserved is already occupying: the GPU is held from the reservation on.
    const { jobId } = await reserveJob(t.app, renter, machine);
    expect(await readinessOf(machine.offerId)).toBe('unavailable');
    await runJob(t, machine.machineId, jobId);
    expect(await readinessOf(machine.offerId)).toBe('unavailable');
    const cli = await cliSearch(machine.offerId);
    expect(cli.item?.readiness).toBe('unavailable');
    expect(cli.row).toMatch(/\bunavailable\b/);
    expect(cli.row).not.toMatch(/\bready\b/);
    const refused = await quote(machine.offerId);
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().error.code).toBe('GPUS_NOT_AVAILABLE');
  });

  it('a machine with two GPUs stays ready while one is free, and is unavailable once both are rented', async () => {
    const machine = await liveMachine(t.ctx, t.app);
    await reserveJob(t.app, renter, machine);
    expect(await readinessOf(machine.offerId)).toBe('ready');
    expect((await quote(machine.offerId)).statusCode).toBe(201);
    await reserveJob(t.app, renter, machine);
    expect(await readinessOf(machine.offerId)).toBe('unavailable');
  });

  it('the offer is ready again once its job no longer occupies the machine', async () => {
    const machine = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: sampleManifest().gpus.slice(0, 1) }) });
    const { jobId } = await reserveJob(t.app, renter, machine);
    expect(await readinessOf(machine.offerId)).toBe('unavailable');
    // Stopped before it started: a cancellation, the machine free at once.
    const stopped = await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${jobId}/stop`,
      headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() },
      payload: { reason: 'changed my mind' },
    });
    expect(stopped.statusCode, stopped.body).toBe(202);
    expect(await readinessOf(machine.offerId)).toBe('unavailable');
    // The agent confirms the stop: STOPPED holds nothing.
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'stopped', t.clock.now()));
    expect((await getJob(t.app, renter, jobId)).state).toMatch(/^(STOPPED|CLEANING|CLOSED)$/);
    expect(await readinessOf(machine.offerId)).toBe('ready');
  });
});
