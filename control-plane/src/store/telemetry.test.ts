import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TelemetrySample } from '@ark/shared';
import {
  type BucketContribution,
  type FieldStats,
  GPU_FIELDS,
  HOST_DEVICE,
  HOST_FIELDS,
  mergeStats,
  PRESENCE_FIELD,
  rollUp,
} from '../domain/telemetry/rollup.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import * as deviceRows from './migrations/0030-telemetry-device-rows.js';
import { mergeTelemetry, mergeTelemetryOfMachines, readTelemetry } from './telemetry.js';

// Telemetry of several machines merged in one go (the gateway's group) stores what merging each batch alone, in
// order, stores: the same buckets, samples, min, max, sum and count, even where batches share a bucket. What is read
// back is what merging every batch's roll-up in memory gives, field by field, also where a field was measured in
// some batches of a bucket only; and the rows kept one per field before migration 0030 read back the same after it.

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
    const devices = await store.db
      .selectFrom('telemetry_device_stats')
      .selectAll()
      .orderBy('machine_id')
      .orderBy('bucket_start')
      .orderBy('device')
      .execute();
    // bigint columns as text: SQLite answers bigint, Postgres text.
    const text = (row: object) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? String(v) : v]));
    return [buckets.map(text), devices.map(text)];
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
    await store.db.deleteFrom('telemetry_device_stats').execute();
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
      Array<{ machine_id: string; temperature_c_max: number }>,
    ];
    expect(after[0].find((row) => row.machine_id === b)?.samples).toBe('2');
    expect(after[1].find((row) => row.machine_id === b && row.temperature_c_max !== null)?.temperature_c_max).toBe(99);
  });

  it('reads back what merging every batch in memory gives, with fields measured in some batches only', async () => {
    const machine = randomUUID();
    const gpu = '00000000:01:00.0';
    const batches: TelemetrySample[][] = [
      // Temperature only, then utilization only, then both, and a second GPU that comes and goes: one bucket.
      [{ at: '2026-01-01T00:05:05.000Z', devices: [{ pci_address: gpu, temperature_c: 61 }] }],
      [
        { at: '2026-01-01T00:05:15.000Z', host: { load1: 0.5 }, devices: [{ pci_address: gpu, utilization_pct: 40 }] },
        { at: '2026-01-01T00:05:25.000Z', devices: [{ pci_address: gpu }, { pci_address: '00000000:02:00.0', power_watts: 300 }] },
      ],
      [
        {
          at: '2026-01-01T00:05:35.000Z',
          host: { load1: 2.25, uptime_s: 1e6, disk_free_bytes: 2 ** 40 },
          devices: [{ pci_address: gpu, temperature_c: 55, utilization_pct: 100, memory_used_bytes: 8 * 2 ** 30 }],
        },
        // And the bucket before, in the same batch.
        { at: '2026-01-01T00:04:59.000Z', devices: [{ pci_address: gpu, temperature_c: -3.5, fan_pct: 0 }] },
      ],
    ];
    for (const samples of batches) await mergeTelemetry(store.db, machine, rollUp(samples, now));
    const expected = mergedInMemory(batches.map((samples) => rollUp(samples, now)));
    expect(plain(await readTelemetry(store.db, machine, 3600, now))).toEqual(plain(expected));
    const [, devices] = (await stored()) as [unknown, Array<Record<string, unknown>>];
    // Three device rows in the later bucket (two GPUs and the host), one in the earlier; none per field.
    expect(devices.map((row) => [row.bucket_start, row.device])).toEqual([
      ['2026-01-01T00:00:00.000Z', gpu],
      ['2026-01-01T00:05:00.000Z', '#host'],
      ['2026-01-01T00:05:00.000Z', gpu],
      ['2026-01-01T00:05:00.000Z', '00000000:02:00.0'],
    ]);
    const later = devices.find((row) => row.bucket_start === '2026-01-01T00:05:00.000Z' && row.device === gpu);
    expect(later).toMatchObject({
      seen_count: '4',
      temperature_c_min: 55,
      temperature_c_max: 61,
      temperature_c_count: '2',
      power_watts_count: null,
    });
  });

  it("has columns for every field the roll-up measures, the GPUs' and the host's", async () => {
    const machine = randomUUID();
    const value = (i: number) => 10 + i;
    const samples: TelemetrySample[] = [
      {
        at: '2026-01-01T00:05:05.000Z',
        host: Object.fromEntries(HOST_FIELDS.map((field, i) => [field, value(i)])),
        devices: [{ pci_address: '00000000:01:00.0', ...Object.fromEntries(GPU_FIELDS.map((field, i) => [field, value(i)])) }],
      },
    ];
    await mergeTelemetry(store.db, machine, rollUp(samples, now));
    const [bucket] = await readTelemetry(store.db, machine, 3600, now);
    expect([...(bucket?.stats.get('00000000:01:00.0')?.keys() ?? [])].sort()).toEqual([...GPU_FIELDS, PRESENCE_FIELD].sort());
    expect([...(bucket?.stats.get(HOST_DEVICE)?.keys() ?? [])].sort()).toEqual([...HOST_FIELDS].sort());
    expect(plain(await readTelemetry(store.db, machine, 3600, now))).toEqual(plain(rollUp(samples, now)));
  });

  it('moves the rows kept one per field into device rows, and back', async () => {
    const machine = randomUUID();
    const samples: TelemetrySample[] = [
      {
        at: '2026-01-01T00:05:05.000Z',
        host: { cpu_utilization_pct: 12.5, memory_used_bytes: 3 * 2 ** 30 },
        devices: [{ pci_address: '00000000:01:00.0', temperature_c: 70, unified_memory_used_bytes: 1024 }],
      },
      { at: '2026-01-01T00:05:45.000Z', devices: [{ pci_address: '00000000:01:00.0', temperature_c: 72, utilization_pct: 99 }] },
      { at: '2026-01-01T00:01:00.000Z', devices: [{ pci_address: '00000000:03:00.0' }] },
    ];
    const contributions = rollUp(samples, now);
    // The store as migration 0029 left it, holding what the control plane of then wrote: a row per field.
    await deviceRows.down(store.db);
    const perField = contributions.flatMap((bucket) =>
      [...bucket.stats].flatMap(([device, fields]) =>
        [...fields].map(([field, s]) => ({
          machine_id: machine,
          bucket_start: bucket.bucketStart.toISOString(),
          device,
          field,
          min: s.min,
          max: s.max,
          sum: s.sum,
          count: BigInt(s.count),
        })),
      ),
    );
    const narrow = store.db as unknown as import('kysely').Kysely<{ telemetry_stats: (typeof perField)[number] }>;
    await narrow.insertInto('telemetry_stats').values(perField).execute();
    await store.db
      .insertInto('telemetry_buckets')
      .values(contributions.map((b) => ({ machine_id: machine, bucket_start: b.bucketStart.toISOString(), samples: BigInt(b.samples) })))
      .execute();
    await deviceRows.up(store.db);
    expect(plain(await readTelemetry(store.db, machine, 3600, now))).toEqual(plain(contributions));
    // Down again: the same rows per field.
    await deviceRows.down(store.db);
    const back = await narrow.selectFrom('telemetry_stats').selectAll().execute();
    const key = (r: { device: string; field: string; bucket_start: string }) => `${r.bucket_start} ${r.device} ${r.field}`;
    const rows = (list: typeof perField) => list.map((r) => ({ ...r, count: String(r.count) })).sort((x, y) => (key(x) < key(y) ? -1 : 1));
    expect(rows(back)).toEqual(rows(perField));
    await deviceRows.up(store.db);
  });
});

/** Every batch's contributions merged per bucket, device and field, as one batch holding all their samples would be. */
function mergedInMemory(batches: BucketContribution[][]): BucketContribution[] {
  const byStart = new Map<number, BucketContribution>();
  for (const bucket of batches.flat()) {
    const at = bucket.bucketStart.getTime();
    const into = byStart.get(at) ?? { bucketStart: bucket.bucketStart, samples: 0, stats: new Map() };
    byStart.set(at, into);
    into.samples += bucket.samples;
    for (const [device, fields] of bucket.stats) {
      const merged = into.stats.get(device) ?? new Map<string, FieldStats>();
      into.stats.set(device, merged);
      for (const [field, s] of fields) merged.set(field, merged.has(field) ? mergeStats(merged.get(field) as FieldStats, s) : s);
    }
  }
  return [...byStart.values()].sort((a, b) => a.bucketStart.getTime() - b.bucketStart.getTime());
}

/** Buckets as plain objects, devices and fields sorted, for toEqual. */
function plain(buckets: BucketContribution[]) {
  const sorted = <V>(map: Map<string, V>) => [...map].sort(([a], [b]) => (a < b ? -1 : 1));
  return buckets.map((b) => ({
    bucketStart: b.bucketStart.toISOString(),
    samples: b.samples,
    stats: sorted(b.stats).map(([device, fields]) => [device, Object.fromEntries(sorted(fields))]),
  }));
}
