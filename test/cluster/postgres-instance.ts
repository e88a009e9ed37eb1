// A private PostgreSQL server for the cluster test: initdb into a temp dir, its own port, started and restarted with
// pg_ctl, so the test can restart "the database" without touching the machine's server that other suites share.
// initdb refuses root: as root, every command runs as the `postgres` user (runuser), which owns the data dir.
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runCommand, stablePort, waitFor } from '../harness/processes.js';

export interface PostgresInstance {
  /** postgres://postgres@127.0.0.1:PORT/ark (trust auth on loopback). */
  url: string;
  port: number;
  /** Stops the server (fast: open sessions are cut), then starts it again on the same port and data. */
  restart(downMs?: number): Promise<void>;
  /** The end of the server's log (server.log), for a failure's message. */
  logTail(): string;
  /** Stops the server and removes its directory. Safe to call twice. */
  stop(): Promise<void>;
}

/** The newest /usr/lib/postgresql/<major>/bin holding initdb (Debian's layout). */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((d) => existsSync(join(root, d, 'bin', 'initdb'))) : [];
  majors.sort((a, b) => Number(b) - Number(a));
  if (majors[0] === undefined) throw new Error(`no PostgreSQL server binaries under ${root}`);
  return join(root, majors[0], 'bin');
}

export function isPrivatePostgresAvailable(): boolean {
  try {
    postgresBin();
    return true;
  } catch {
    return false;
  }
}

export async function startPostgresInstance(): Promise<PostgresInstance> {
  const bin = postgresBin();
  const dir = mkdtempSync(join(tmpdir(), 'ark-cluster-pg-'));
  const data = join(dir, 'data');
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const uid = await runCommand('id', ['-u', 'postgres']);
    const gid = await runCommand('id', ['-g', 'postgres']);
    chownSync(dir, Number(uid.stdout.trim()), Number(gid.stdout.trim()));
  }
  const run = (tool: string, args: string[], timeoutMs = 60_000) =>
    asRoot
      ? runCommand('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { timeoutMs })
      : runCommand(join(bin, tool), args, { timeoutMs });
  // The same port after every restart (the replicas' DATABASE_URL): one no outgoing connection can take meanwhile.
  const port = await stablePort();
  // Small and quick: no fsync (a test database), its socket in its own dir, loopback TCP on the chosen port.
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
    '-c shared_buffers=64MB',
  ].join(' ');
  const logTail = () => {
    try {
      return readFileSync(join(dir, 'server.log'), 'utf8').slice(-3000);
    } catch {
      return '(no server.log)';
    }
  };
  // pg_ctl's own error says only "could not start server": the why (a bind, a crash) is in the server's log.
  const start = () =>
    run('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-o', options, '-w', '-t', '60', 'start']).catch((error: Error) => {
      throw new Error(`${error.message}\n--- postgresql server.log (port ${port}) ---\n${logTail()}`);
    });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '30', 'stop']).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  const url = `postgres://postgres@127.0.0.1:${port}/ark`;
  try {
    await run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    await start();
    const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
    await admin.connect();
    await admin.query('CREATE DATABASE ark');
    await admin.end();
  } catch (error) {
    // Nobody holds this instance yet: a half-started server would outlive the test.
    await stop();
    throw error;
  }
  return {
    url,
    port,
    logTail,
    async restart(downMs = 0) {
      await run('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
      await waitFor(
        async () => {
          const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
          await client.connect();
          await client.end();
          return true;
        },
        { timeoutMs: 30_000, description: 'the private PostgreSQL to accept connections again' },
      );
    },
    stop,
  };
}
