// A PostgreSQL restart as a replica sees it, with requests in flight: every server connection of the control
// plane's database is terminated (pg_terminate_backend, what a restart or failover does to each session), several
// times while requests run. The replica must live through it, answer what it could not serve 503 UNAVAILABLE with
// `retryable: true` (never 500), and serve again at once (issue 26: a checked-out pool client's 'error' event had
// no listener and killed the process).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresAdminUrl, type TestDatabase } from '../harness/postgres.js';
import { type ControlPlane, controlPlaneCli, startControlPlane } from './host-side-helpers.js';

const PASSWORD = 'a long enough password for the outage test';

async function terminateBackends(databaseName: string): Promise<number> {
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  try {
    const result = await admin.query(
      'SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [databaseName],
    );
    return Number(result.rows[0]?.n ?? 0);
  } finally {
    await admin.end();
  }
}

describe('a control plane on PostgreSQL whose database connections are all cut, with requests in flight', () => {
  let database: TestDatabase;
  let cp: ControlPlane;
  let token: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    cp = await startControlPlane({ databaseUrl: database.url });
    const email = `outage-${randomUUID().slice(0, 8)}@example.test`;
    await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'renter', '--password', PASSWORD, '--verified']);
    const signIn = await fetch(`${cp.base}/api/v1/auth/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    });
    expect(signIn.status).toBe(201);
    token = ((await signIn.json()) as { session_token: string }).session_token;
  }, 120_000);

  afterAll(async () => {
    await cp?.process.stop('SIGTERM');
    await database?.drop();
  });

  it('lives through it, answers 503 UNAVAILABLE retryable for what it could not serve, and serves again', async () => {
    const statuses = new Map<number, number>();
    const unexpected: string[] = [];
    let running = true;
    const read = async () => {
      while (running) {
        const response = await fetch(`${cp.base}/api/v1/account`, { headers: { authorization: `Bearer ${token}` } });
        const body = (await response.json()) as { error?: { code: string; retryable: boolean } };
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const fine = response.status === 200 || (response.status === 503 && body.error?.code === 'UNAVAILABLE' && body.error.retryable);
        if (!fine) unexpected.push(`${response.status} ${JSON.stringify(body)}`);
      }
    };
    const readers = Array.from({ length: 12 }, read);
    let terminated = 0;
    for (let cut = 0; cut < 5; cut++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      terminated += await terminateBackends(database.name);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    running = false;
    await Promise.all(readers);

    expect(terminated).toBeGreaterThan(0);
    expect(unexpected).toEqual([]);
    expect(cp.process.isRunning(), cp.process.output()).toBe(true);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
    // Once the cuts stop, every request is served again (the pool replaced the broken clients).
    for (let i = 0; i < 20; i++) {
      const response = await fetch(`${cp.base}/api/v1/account`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).toBe(200);
    }
  });
});
