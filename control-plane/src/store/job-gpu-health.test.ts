import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { gpusHealthyAtOf, recordGpusHealthy } from './job-gpu-health.js';

// A job's last GPU-healthy point only moves forward, in one upsert: an older sample (a late or replayed telemetry
// batch) never moves it back.

describe.each(DIALECTS)('job GPU-healthy point on %s', (dialect) => {
  let store: TestStore;

  beforeEach(async () => {
    store = await createTestStore(dialect);
  });

  afterEach(async () => {
    await store.destroy();
  });

  it('records the first point, moves forward, and never back', async () => {
    const jobId = randomUUID();
    const t = (s: number) => new Date(Date.UTC(2026, 10, 28, 12, 0, s));
    expect(await gpusHealthyAtOf(store.db, jobId)).toBeNull();
    const record = (at: Date) => store.db.transaction().execute((trx) => recordGpusHealthy(trx, jobId, at));
    await record(t(10));
    expect(await gpusHealthyAtOf(store.db, jobId)).toEqual(t(10));
    await record(t(40));
    expect(await gpusHealthyAtOf(store.db, jobId)).toEqual(t(40));
    await record(t(20));
    expect(await gpusHealthyAtOf(store.db, jobId)).toEqual(t(40));
    expect(await gpusHealthyAtOf(store.db, randomUUID())).toBeNull();
  });
});
