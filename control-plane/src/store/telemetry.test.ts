import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rollUp } from '../domain/telemetry/rollup.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { mergeTelemetry, mergeTelemetryOfMachines } from './telemetry.js';

// Telemetry of several machines merged in one go (the gateway's group) stores what merging each batch alone, in
// order, stores: the same buckets, samples, min, max, sum and count, even where batches share a bucket.

const now = new Date('2026-01-01T00:10:00.000Z');
const sample = (at: string, util: number, temp: number) => ({
  at,
  host: { cpu_utilization_pct: util },
  devices: [{ pci_address: '00000000:01:00.0', temperature_c: temp, utilization_pct: util }],
});

describe.each(DIALECTS)('telemetry merge on %s', (dialect) => {
  let store: TestStore;
  beforeEach(async () => {
    store = await createTestStore(dialect);
  });
  afterEach(async () => {
    await store.destroy();
  });

  async function stored(): Promise<unknown[]> {
    const buckets = await store.db.selectFrom('telemetry_buckets').selectAll().orderBy('machine_id').orderBy('bucket_start').execute();
    const stats = await store.db
      .selectFrom('telemetry_stats')
      .selectAll()
      .orderBy('machine_id')
      .orderBy('bucket_start')
      .orderBy('device')
      .orderBy('field')
      .execute();
    return [buckets.map((b) => ({ ...b, samples: String(b.samples) })), stats.map((s) => ({ ...s, count: String(s.count) }))];
  }

  it('stores the same as merging batch by batch, across machines and shared buckets', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const batches = [
      { machineId: a, msg: [sample('2026-01-01T00:04:50.000Z', 10, 50), sample('2026-01-01T00:05:10.000Z', 30, 70)] },
      { machineId: b, msg: [sample('2026-01-01T00:05:20.000Z', 90, 60)] },
      // Machine a again, into a bucket its first batch also touched.
      { machineId: a, msg: [sample('2026-01-01T00:05:40.000Z', 50, 40), sample('2026-01-01T00:05:50.000Z', 5, 80)] },
    ];
    for (const { machineId, msg } of batches) await mergeTelemetry(store.db, machineId, rollUp(msg, now));
    const oneByOne = await stored();
    await store.db.deleteFrom('telemetry_stats').execute();
    await store.db.deleteFrom('telemetry_buckets').execute();
    await store.db.transaction().execute((trx) =>
      mergeTelemetryOfMachines(
        trx,
        batches.map(({ machineId, msg }) => ({ machineId, contributions: rollUp(msg, now) })),
      ),
    );
    expect(await stored()).toEqual(oneByOne);
    expect((oneByOne[0] as unknown[]).length).toBe(3);
    // And merging the group into what is stored adds to it, as further batches would.
    await mergeTelemetryOfMachines(store.db, [{ machineId: b, contributions: rollUp([sample('2026-01-01T00:05:30.000Z', 1, 99)], now) }]);
    const after = (await stored()) as [
      Array<{ machine_id: string; samples: string }>,
      Array<{ machine_id: string; field: string; max: number }>,
    ];
    expect(after[0].find((row) => row.machine_id === b)?.samples).toBe('2');
  });
});
