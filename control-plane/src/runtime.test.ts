import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from './clock.js';
import { noFaults } from './faults.js';
import { InProcessClaimLocks, PostgresClaimLocks } from './http/claim-locks.js';
import { createRuntime, type Runtime } from './runtime.js';
import { OUTBOX_NOTIFY_CHANNEL } from './store/outbox.js';
import { testConfig } from './testing/app.js';
import { createTestStore, type TestStore } from './testing/stores.js';

// The composition root builds every real adapter once (runtime.ts), the replicas' dedicated PostgreSQL connections
// among them: here two runtimes over one database are two replicas, and what one holds or sends the other sees.

const silent = pino({ level: 'silent' });

describe('the runtime', () => {
  const opened: Runtime[] = [];
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const runtime of opened.splice(0)) await runtime.close();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function runtimeOver(config: ReturnType<typeof testConfig>): Promise<Runtime> {
    const runtime = await createRuntime(config, silent, systemClock);
    opened.push(runtime);
    return runtime;
  }

  it('on SQLite: claims in memory, no LISTEN connection, no payout wallet, no faults', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ark-runtime-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const runtime = await runtimeOver(testConfig({ dataDir, databaseUrl: null }));
    expect(runtime.store.dialect).toBe('sqlite');
    expect(runtime.claimLocks).toBeInstanceOf(InProcessClaimLocks);
    expect(runtime.listenConnector).toBeNull();
    expect(runtime.payoutWallet).toBeNull();
    expect(runtime.faults).toBe(noFaults);
    expect(runtime.services.alerts.target).toBeNull();
  });

  describe('two replicas over one PostgreSQL database', () => {
    let store: TestStore;

    async function replicas(): Promise<[Runtime, Runtime]> {
      store = await createTestStore('postgres');
      cleanups.push(() => store.destroy());
      const config = testConfig({ databaseUrl: store.location });
      return [await runtimeOver(config), await runtimeOver(config)];
    }

    it('hold idempotency claims on advisory locks: a key claimed on one replica is busy on the other until given back', async () => {
      const [a, b] = await replicas();
      expect(a.claimLocks).toBeInstanceOf(PostgresClaimLocks);
      const id = 'account-1:POST /api/v1/jobs:0b1c2d3e-0000-4000-8000-000000000001';
      expect(await a.claimLocks.tryLock(id)).toBe(true);
      expect(await b.claimLocks.tryLock(id)).toBe(false);
      await a.claimLocks.unlock(id);
      expect(await b.claimLocks.tryLock(id)).toBe(true);
      await b.claimLocks.unlock(id);
    });

    it('give the gateway a LISTEN connection that hears what another replica queues', async () => {
      const [a, b] = await replicas();
      expect(a.listenConnector).not.toBeNull();
      const client = a.listenConnector?.();
      if (!client) throw new Error('no LISTEN connector on PostgreSQL');
      cleanups.push(() => client.end().catch(() => {}));
      await client.connect();
      await client.query(`LISTEN ${OUTBOX_NOTIFY_CHANNEL}`);
      const heard = new Promise<string | undefined>((resolve) => client.once('notification', (message) => resolve(message.payload)));
      // What store/outbox.ts sends when a command is queued, from the other replica's pool.
      await sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, ${'machine-1'})`.execute(b.store.db);
      expect(await heard).toBe('machine-1');
    });
  });
});
