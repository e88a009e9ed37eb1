import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { appendJobEvents, countJobEvents, JOB_EVENTS_KEPT, listJobEvents } from './job-events.js';

describe.each(DIALECTS)('job events on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.destroy();
  });

  /** A bare job row: events only need the row's counter. */
  async function job(): Promise<{ id: string; eventSeq: bigint }> {
    const id = randomUUID();
    const at = new Date().toISOString();
    await store.db
      .insertInto('jobs')
      .values({
        id,
        account_id: 'a',
        machine_id: 'm',
        host_account_id: 'h',
        quote_id: randomUUID(),
        state: 'RESERVED',
        fence: 1n,
        job_version: 1n,
        budget_version: 1n,
        machine_rate_micro_per_hour: 1n,
        platform_fee_bps: 0n,
        funded_budget_micro: 1n,
        duration_limit_s: 1n,
        host_ceiling_at: at,
        funded_through: null,
        gpu_count: 1n,
        gpu_model: null,
        gpu_pci_addresses: '[]',
        image_digest: 'x',
        template_id: null,
        template_name: null,
        template_kind: null,
        launch_sealed: '',
        env_sealed: '',
        engine_key_sealed: null,
        accepted_runtime_ms: 0n,
        cumulative_charge_micro: 0n,
        charged_host_micro: 0n,
        charged_fee_micro: 0n,
        meter_started_at: null,
        meter_floor_at: null,
        last_meter_receipt_at: null,
        meter_seq: 0n,
        metered_until: null,
        access: null,
        pull_progress_pct: null,
        stop_requested_at: null,
        stop_reason: null,
        close_reason: null,
        stopped_at: null,
        retrieval_until: null,
        closed_at: null,
        state_changed_at: at,
        event_seq: 0n,
        created_at: at,
        updated_at: at,
      })
      .execute();
    return { id, eventSeq: 0n };
  }

  it('sequences events per job from 1, sanitized, and lists them after a seq', async () => {
    const a = await job();
    const b = await job();
    const now = new Date('2026-01-01T00:00:00.000Z');
    await appendJobEvents(
      store.db,
      a,
      [
        { kind: 'one', message: 'first' },
        { kind: 'two', message: 'pw hunter22\x00', data: { detail: 'token=abcdefghij' } },
      ],
      now,
      ['hunter22'],
    );
    await appendJobEvents(store.db, b, [{ kind: 'other', message: 'x' }], now);
    await appendJobEvents(store.db, a, [{ kind: 'three', message: 'third' }], now);
    expect(a.eventSeq).toBe(3n);
    const events = await listJobEvents(store.db, a.id, 0n, 10);
    expect(events).toEqual([
      { seq: 1, at: now.toISOString(), kind: 'one', message: 'first', data: {} },
      { seq: 2, at: now.toISOString(), kind: 'two', message: 'pw [REDACTED]', data: { detail: 'token=[REDACTED]' } },
      { seq: 3, at: now.toISOString(), kind: 'three', message: 'third', data: {} },
    ]);
    expect((await listJobEvents(store.db, a.id, 2n, 10)).map((e) => e.seq)).toEqual([3]);
    expect((await listJobEvents(store.db, b.id, 0n, 10)).map((e) => e.seq)).toEqual([1]);
    const row = await store.db.selectFrom('jobs').select('event_seq').where('id', '=', a.id).executeTakeFirstOrThrow();
    expect(row.event_seq).toBe(3n);
  });

  it(`keeps at most ${JOB_EVENTS_KEPT} events per job, dropping the oldest`, async () => {
    const a = await job();
    const now = new Date();
    const batch = Array.from({ length: 150 }, (_, i) => ({ kind: 'tick', message: `event ${i}` }));
    for (let i = 0; i < 8; i++) await appendJobEvents(store.db, a, batch, now);
    expect(a.eventSeq).toBe(1200n);
    expect(await countJobEvents(store.db, a.id)).toBe(JOB_EVENTS_KEPT);
    const first = await listJobEvents(store.db, a.id, 0n, 1);
    expect(first[0]?.seq).toBe(201);
  });
});
