// What offer search says about a machine (issue 25, items 4 and 7): one rented out right now is listed `unavailable`
// (contract part 3's readiness values: ready, provisioning, unavailable), never `ready`, by the API and so by `ark
// offers search`, the console and MCP alike, and quoting it is refused as search said. One that reports no GPU is not
// offered unless its host lists it as a CPU machine, and then it shows as one: the contract's OfferSummary without
// gpu_count and model, `CPU` in the CLI's table.
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

  it('a machine reporting no GPU is offered only once its host lists it as a CPU machine, and shows as one', async () => {
    const machine = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: [] }), cpuListed: false });
    expect(await readinessOf(machine.offerId)).toBeUndefined();
    expect((await cliSearch(machine.offerId)).item).toBeUndefined();
    const unlisted = await quote(machine.offerId);
    expect(unlisted.statusCode, unlisted.body).toBe(409);
    expect(unlisted.json().error).toMatchObject({ code: 'MACHINE_NOT_AVAILABLE', message: expect.stringMatching(/CPU machine/) });

    const cpuListing = (listed: boolean, token = machine.host.apiKey) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/hosts/machines/${machine.machineId}/cpu-listing`,
        headers: { ...bearer(token), 'idempotency-key': randomUUID() },
        payload: { cpu_listing: listed },
      });
    // Only its host: anyone else gets 404 (another host, a renter alike), and nothing changes.
    const stranger = await seedAccount(t.ctx, { role: 'host' });
    expect((await cpuListing(true, stranger.apiKey)).statusCode).toBe(404);
    expect((await cpuListing(true, renter.apiKey)).statusCode).toBe(404);
    expect(await readinessOf(machine.offerId)).toBeUndefined();
    const on = await cpuListing(true);
    expect(on.statusCode, on.body).toBe(200);
    expect(on.json()).toEqual({ machine_id: machine.machineId, cpu_listing: true, gpu_count: 0 });
    const shown = await t.app.inject({
      method: 'GET',
      url: `/api/v1/hosts/machines/${machine.machineId}`,
      headers: bearer(machine.host.apiKey),
    });
    expect(shown.json().cpu_listing).toBe(true);

    // Listed as a CPU offer: ready, no gpu_count and no model (the contract's OfferSummary carries them only for GPUs).
    const listed = await t.app.inject({ method: 'GET', url: '/api/v1/offers?limit=100', headers: bearer(renter.apiKey) });
    const offer = (listed.json().items as Json[]).find((o) => o.offer_id === machine.offerId);
    expect(offer).toMatchObject({ readiness: 'ready', ram_bytes: sampleManifest().ram_bytes });
    expect(offer).not.toHaveProperty('gpu_count');
    expect(offer).not.toHaveProperty('model');
    expect(offer).not.toHaveProperty('vram_bytes');
    const cli = await cliSearch(machine.offerId);
    expect(cli.item?.gpu_count).toBeUndefined();
    expect(
      cli.row
        ?.split('│')
        .map((cell) => cell.trim())
        .slice(1, 4),
    ).toEqual([machine.offerId, 'CPU', '-']);

    // Rented whole, it is rented out: unavailable, and a second quote is refused with MACHINE_NOT_AVAILABLE.
    const { jobId, quote: quoted } = await reserveJob(t.app, renter, machine);
    expect(quoted.gpu_count).toBe(1);
    await runJob(t, machine.machineId, jobId);
    expect(await readinessOf(machine.offerId)).toBe('unavailable');
    expect((await cliSearch(machine.offerId)).row).toMatch(/\bunavailable\b/);
    const taken = await quote(machine.offerId);
    expect(taken.statusCode, taken.body).toBe(409);
    expect(taken.json().error.code).toBe('MACHINE_NOT_AVAILABLE');

    // Off: it leaves the search at once.
    expect((await cpuListing(false)).json()).toMatchObject({ cpu_listing: false });
    expect(await readinessOf(machine.offerId)).toBeUndefined();
  });
});
