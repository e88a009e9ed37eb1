// A fresh PostgreSQL database per test (or per suite) on the machine's server, so suites never
// share rows and can run in parallel. Dropped afterwards even if connections are still open.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server every developer and CI machine runs (trust auth); override for other setups. */
export const postgresAdminUrl = process.env.ARK_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface CreateTestDatabaseOptions {
  /** A database to connect to for CREATE/DROP DATABASE. */
  adminUrl?: string;
  /** Clone this database (e.g. one already migrated) instead of the server's template1. */
  template?: string;
}

export interface TestDatabase {
  /** Connection URL of the new database, for DATABASE_URL. */
  url: string;
  name: string;
  /** Drops the database, disconnecting any remaining sessions. Safe to call twice. */
  drop(): Promise<void>;
}

// Database names go into SQL unquoted by parameters (CREATE DATABASE takes no bind values),
// so only names we generate or that match this pattern are accepted.
const safeName = /^[a-z_][a-z0-9_]{0,62}$/;

async function withAdminClient<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function createTestDatabase(options: CreateTestDatabaseOptions = {}): Promise<TestDatabase> {
  const adminUrl = options.adminUrl ?? postgresAdminUrl;
  const name = `ark_test_${randomBytes(6).toString('hex')}`;
  const template = options.template;
  if (template !== undefined && !safeName.test(template)) {
    throw new Error(`refusing template database name ${JSON.stringify(template)}`);
  }
  await withAdminClient(adminUrl, (client) =>
    client.query(`CREATE DATABASE ${name}${template === undefined ? '' : ` TEMPLATE ${template}`}`),
  );
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    name,
    drop: () => {
      dropped ??= withAdminClient(adminUrl, async (client) => {
        // FORCE (PostgreSQL 13+) ends sessions a test left open, e.g. a pool not yet closed.
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      });
      return dropped;
    },
  };
}
