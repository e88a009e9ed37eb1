import { randomUUID } from 'node:crypto';
import { hardwareReceiptScore, MachineVerificationView, verifyHardwareReceipt } from '@ark/shared';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp, testConfig } from '../../testing/app.js';
import { machineKeyPair, sampleManifest } from '../../testing/hosting.js';
import {
  BENCHMARK_IMAGE,
  hardwareReceiptMessage,
  RECORDED_H200_BENCHMARK,
  RECORDED_L4_GPUS,
  receiptBody,
  signHardwareReceipt,
} from '../../testing/receipts.js';
import { customImage, deliver, fund, type LiveMachine, liveMachine, postQuote, queuedCommands } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

// Hardware receipts through the real app on each store: receipts delivered the way the gateway applies them (the
// registered handler inside the apply-once transaction), the public verification view, offers with score and
// min_score, the unlisting with its ticket and webhook event, the self-tests queued at enrollment, on request and daily.

type Json = Record<string, any>;
const viewSchema = TypeCompiler.Compile(MachineVerificationView);
const L4_MANIFEST_GPUS = RECORDED_L4_GPUS.map((g) => ({ pci_address: g.pci_address, model: g.name, vram_bytes: String(g.vram_bytes) }));

describe.each(DIALECTS)('hardware receipts on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let renter: SeededAccount;

  const view = async (machineId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/machines/${machineId}/verification` });
    expect(res.statusCode, res.body).toBe(200);
    expect(viewSchema.Check(res.json()), res.body).toBe(true);
    return res.json() as Json;
  };
  const offers = async (query: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/offers${query}`, headers: bearer(renter.apiKey) });
    return { status: res.statusCode, body: res.json() as Json };
  };
  const refusals = async () => {
    const text = await t.ctx.metrics.registry.getSingleMetricAsString('ark_hardware_receipts_refused_total');
    return Object.fromEntries([...text.matchAll(/reason="(\w+)"} (\d+)/g)].map((m) => [m[1], Number(m[2])]));
  };
  const webhookEvents = async (accountId: string) =>
    (
      await t.store.db
        .selectFrom('webhook_events')
        .select(['type', 'payload'])
        .where('account_id', '=', accountId)
        .where('type', 'in', ['machine.unlisted', 'machine.relisted'])
        .orderBy('created_at')
        .execute()
    ).map((e) => ({ type: e.type, data: JSON.parse(e.payload).data }));

  beforeAll(async () => {
    const base = testConfig();
    t = await createTestApp(dialect, {
      configOverrides: {
        selftest: { benchmarkImage: BENCHMARK_IMAGE, timeoutMs: 600_000, intervalMs: 86_400_000, workerIntervalMs: 60_000 },
        webhooks: { ...base.webhooks, allowPrivate: true },
      },
    });
    renter = await seedAccount(t.ctx, { scopes: ['renter'] });
    await fund(t.ctx, renter.accountId, 100_000_000n);
  });
  afterAll(async () => {
    await t?.destroy();
  });

  it('stores a verified receipt exactly as signed, shows it publicly with the score, and offers filter on min_score', async () => {
    const keys = machineKeyPair();
    const m = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: [] }), publicKey: keys.publicKey });
    // Enrollment made the first self-test due: the worker's next step asks for it, with the configured benchmark image.
    expect(await queuedCommands(t.ctx, m.machineId)).toEqual([]);
    await t.ctx.services.hosting.queueDueSelftests();
    const commands = await queuedCommands(t.ctx, m.machineId);
    expect(commands.map((c) => [c.kind, c.body])).toEqual([
      ['run_selftest', { trigger: 'enrollment', timeout_ms: 600_000, benchmark_image: BENCHMARK_IMAGE }],
    ]);
    // Nothing measured yet: no score, no receipts.
    expect(await view(m.machineId)).toMatchObject({ public_key: keys.publicKey, score: null, verified_at: null, receipts: [] });

    const body = receiptBody(m.machineId, 1, t.clock.now());
    const signed = signHardwareReceipt(body, keys.sign);
    await deliver(t.ctx, m.machineId, hardwareReceiptMessage(signed));
    const shown = await view(m.machineId);
    expect(shown.score).toBe(154.9);
    expect(shown.verified_at).toBe(body.measured_at);
    expect(shown.unlisted).toBe(false);
    expect(shown.receipts).toHaveLength(1);
    expect(shown.receipts[0]).toMatchObject({ receipt_seq: 1, receipt: signed.receipt, signature: signed.signature, score: 154.9 });
    // Anyone can check it against the served key, and recompute the score.
    const served = shown.receipts[0];
    const check = verifyHardwareReceipt({ receipt: served.receipt, signature: served.signature }, shown.public_key, m.machineId);
    expect(check.ok && hardwareReceiptScore(check.body)).toBe(154.9);

    const listed = await offers('?include=verification&limit=100');
    expect(listed.status).toBe(200);
    expect(listed.body.items.find((o: Json) => o.machine_id === m.machineId)?.verification).toEqual({
      score: 154.9,
      verified_at: body.measured_at,
    });
    const plain = await offers('?limit=100');
    expect(plain.body.items.find((o: Json) => o.machine_id === m.machineId)).not.toHaveProperty('verification');
    const atLeast = await offers('?min_score=154.9&limit=100');
    expect(atLeast.body.items.map((o: Json) => o.machine_id)).toContain(m.machineId);
    const above = await offers('?min_score=155&limit=100');
    expect(above.body.items.map((o: Json) => o.machine_id)).not.toContain(m.machineId);
    for (const bad of ['abc', '-1', '1e3', '1.2345', '']) {
      const refused = await offers(`?min_score=${bad}`);
      expect(refused.status, bad).toBe(422);
      expect(refused.body.error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('refuses and counts forged, tampered, wrong-machine and replayed receipts, storing none of them', async () => {
    const keys = machineKeyPair();
    const m = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: [] }), publicKey: keys.publicKey });
    const other = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: [] }) });
    const before = await refusals();
    const now = t.clock.now();
    // Forged: signed by a key that is not the machine's.
    await deliver(t.ctx, m.machineId, hardwareReceiptMessage(signHardwareReceipt(receiptBody(m.machineId, 1, now), machineKeyPair().sign)));
    // Tampered: a figure changed after signing.
    const honest = signHardwareReceipt(receiptBody(m.machineId, 1, now), keys.sign);
    await deliver(
      t.ctx,
      m.machineId,
      hardwareReceiptMessage({ ...honest, receipt: honest.receipt.replace('"matmul_gflops":480', '"matmul_gflops":4800') }),
    );
    // Non-canonical: the same body re-encoded with spaces, properly signed.
    const spaced = JSON.stringify(JSON.parse(honest.receipt), null, 1);
    await deliver(
      t.ctx,
      m.machineId,
      hardwareReceiptMessage({ receipt: spaced, signature: Buffer.from(keys.sign(Buffer.from(spaced))).toString('base64') }),
    );
    // Wrong machine: a receipt naming another machine, signed by this one's key.
    await deliver(t.ctx, m.machineId, hardwareReceiptMessage(signHardwareReceipt(receiptBody(other.machineId, 1, now), keys.sign)));
    expect((await view(m.machineId)).receipts).toEqual([]);

    // The honest one is stored; sent again, or an older seq, it is a replay.
    await deliver(t.ctx, m.machineId, hardwareReceiptMessage(honest));
    await deliver(t.ctx, m.machineId, hardwareReceiptMessage(honest));
    await deliver(
      t.ctx,
      m.machineId,
      hardwareReceiptMessage(signHardwareReceipt(receiptBody(m.machineId, 1, now, { duration_ms: 1 }), keys.sign)),
    );
    expect((await view(m.machineId)).receipts.map((r: Json) => r.receipt)).toEqual([honest.receipt]);

    const after = await refusals();
    const delta = (reason: string) => (after[reason] ?? 0) - (before[reason] ?? 0);
    expect({
      forged: delta('forged'),
      tampered: delta('tampered'),
      wrong_machine: delta('wrong_machine'),
      replayed: delta('replayed'),
    }).toEqual({
      forged: 2, // the changed figure breaks the signature too
      tampered: 1,
      wrong_machine: 1,
      replayed: 2,
    });
  });

  it('unlists a machine whose receipt shows fewer GPUs than declared, tells its host, and lists it again on an agreeing receipt', async () => {
    const keys = machineKeyPair();
    const m: LiveMachine = await liveMachine(t.ctx, t.app, {
      manifest: sampleManifest({ gpus: L4_MANIFEST_GPUS }),
      publicKey: keys.publicKey,
    });
    const hook = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: { ...bearer(m.host.apiKey), 'idempotency-key': randomUUID() },
      payload: { url: 'http://127.0.0.1:9/hooks', event_types: ['machine.unlisted', 'machine.relisted'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const quote = () => postQuote(t.app, renter, { offer_id: m.offerId, gpu_count: 1, duration_limit_s: 600, image_digest: customImage() });
    expect((await quote()).statusCode).toBe(201);

    // The manifest says two L4; the self-test finds one.
    const one = receiptBody(m.machineId, 1, t.clock.now(), { gpus: [RECORDED_L4_GPUS[0]!], benchmark: undefined });
    await deliver(t.ctx, m.machineId, hardwareReceiptMessage(signHardwareReceipt(one, keys.sign)));
    const unlisted = await view(m.machineId);
    expect(unlisted.unlisted).toBe(true);
    expect(unlisted.contradictions).toEqual([{ code: 'fewer_gpus', message: 'The machine declares 2 GPU(s) but the self-test found 1.' }]);
    expect((await offers('?limit=100')).body.items.map((o: Json) => o.machine_id)).not.toContain(m.machineId);
    const hostView = async () =>
      (await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${m.machineId}`, headers: bearer(m.host.apiKey) })).json() as Json;
    expect((await hostView()).hardware_hold).toMatchObject({
      reason: 'hardware_contradicted',
      contradictions: [{ code: 'fewer_gpus', message: 'The machine declares 2 GPU(s) but the self-test found 1.' }],
    });
    const refused = await quote();
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.code).toBe('OFFER_NOT_CURRENT');

    // The host's case says why, written by the platform; the webhook names it.
    const tickets = await t.app.inject({ method: 'GET', url: '/api/v1/tickets', headers: bearer(m.host.apiKey) });
    const ticket = (tickets.json().items as Json[]).find((x) => x.category === 'hardware');
    expect(ticket).toBeDefined();
    const detail = await t.app.inject({ method: 'GET', url: `/api/v1/tickets/${ticket?.ticket_id}`, headers: bearer(m.host.apiKey) });
    expect(detail.json().messages[0].author_role).toBe('admin');
    expect(detail.json().messages[0].text).toContain('The machine declares 2 GPU(s) but the self-test found 1.');
    expect(await webhookEvents(m.host.accountId)).toEqual([
      {
        type: 'machine.unlisted',
        data: {
          machine_id: m.machineId,
          receipt_seq: 1,
          reasons: [{ code: 'fewer_gpus', message: 'The machine declares 2 GPU(s) but the self-test found 1.' }],
          ticket_id: ticket?.ticket_id,
        },
      },
    ]);

    // The host asks for a self-test (the daily one moves a day past it); both GPUs answer: listed again.
    const asked = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${m.machineId}/selftest`,
      headers: { ...bearer(m.host.apiKey), 'idempotency-key': randomUUID() },
    });
    expect(asked.statusCode, asked.body).toBe(202);
    expect((await queuedCommands(t.ctx, m.machineId)).at(-1)).toMatchObject({ kind: 'run_selftest', body: { trigger: 'command' } });
    const stranger = await seedAccount(t.ctx, { role: 'host' });
    const notTheirs = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${m.machineId}/selftest`,
      headers: { ...bearer(stranger.apiKey), 'idempotency-key': randomUUID() },
    });
    expect(notTheirs.statusCode).toBe(404);
    const both = receiptBody(m.machineId, 2, t.clock.now(), {
      trigger: 'command',
      gpus: RECORDED_L4_GPUS,
      benchmark: { image: BENCHMARK_IMAGE, ...RECORDED_H200_BENCHMARK },
    });
    await deliver(t.ctx, m.machineId, hardwareReceiptMessage(signHardwareReceipt(both, keys.sign)));
    const back = await view(m.machineId);
    expect(back).toMatchObject({ unlisted: false, contradictions: [], score: hardwareReceiptScore(both) });
    expect((await offers('?limit=100')).body.items.map((o: Json) => o.machine_id)).toContain(m.machineId);
    expect((await quote()).statusCode).toBe(201);
    expect(await hostView()).toMatchObject({ hardware: { last_receipt_seq: 2, score: back.score }, hardware_hold: null });
    expect((await webhookEvents(m.host.accountId)).map((e) => e.type)).toEqual(['machine.unlisted', 'machine.relisted']);
    const again = await t.app.inject({ method: 'GET', url: `/api/v1/tickets/${ticket?.ticket_id}`, headers: bearer(m.host.apiKey) });
    expect(again.json().messages.at(-1).text).toBe('Receipt 2 agrees with the declared hardware: the machine is listed again.');
  });

  it('asks each machine for its daily self-test once, however many replicas run the worker', async () => {
    const keys = machineKeyPair();
    const m = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: [] }), publicKey: keys.publicKey });
    const asked = async (trigger: string) =>
      (await queuedCommands(t.ctx, m.machineId)).filter((c) => c.kind === 'run_selftest' && (c.body as Json).trigger === trigger);
    const daily = () => asked('daily');
    await t.ctx.services.hosting.queueDueSelftests();
    expect(await asked('enrollment')).toHaveLength(1);
    // The machine answers its enrollment self-test; the next one is due a day later.
    await deliver(t.ctx, m.machineId, hardwareReceiptMessage(signHardwareReceipt(receiptBody(m.machineId, 1, t.clock.now()), keys.sign)));
    await t.ctx.services.hosting.queueDueSelftests();
    expect(await daily()).toHaveLength(0);
    await t.clock.advance(86_400_000 + 1000);
    // Two replicas' steps at once: one claim wins.
    await Promise.all([t.ctx.services.hosting.queueDueSelftests(), t.ctx.services.hosting.queueDueSelftests()]);
    expect(await daily()).toHaveLength(1);
    await t.ctx.services.hosting.queueDueSelftests();
    expect(await daily()).toHaveLength(1);
  });

  it('answers 404 for an unknown machine’s verification', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/machines/${randomUUID()}/verification` });
    expect(res.statusCode).toBe(404);
  });
});
