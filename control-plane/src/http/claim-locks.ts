import { createHash } from 'node:crypto';
import type { Client as PgClient, QueryResult } from 'pg';
import { DomainError } from '../errors.js';
import type { PostgresConnector } from '../store/db.js';

/**
 * Who is working on a key right now, so that a concurrent twin is told IDEMPOTENCY_IN_PROGRESS (retryable) instead of
 * running too. A claim never outlives its process: nothing a dead process held makes a replay wait.
 * Correctness does not rest on it: an answer is inserted once per key (primary key) in the effect's transaction, so
 * of two effects racing for a key (a claims connection lost mid-request) at most one commits with its answer.
 */
export interface ClaimLocks {
  /** Synchronous where the lock is held in memory only (SQLite): no promise per request. */
  tryLock(id: string): boolean | Promise<boolean>;
  unlock(id: string): void | Promise<void>;
  close(): Promise<void>;
}

/** SQLite: one process owns the file, so claims are held in memory. */
export class InProcessClaimLocks implements ClaimLocks {
  readonly #held = new Set<string>();
  tryLock(id: string): boolean {
    if (this.#held.has(id)) return false;
    this.#held.add(id);
    return true;
  }
  unlock(id: string): void {
    this.#held.delete(id);
  }
  async close(): Promise<void> {}
}

/**
 * PostgreSQL (several replicas): twins in this process are caught in memory, twins on other replicas by a session
 * advisory lock on one dedicated connection per process (session locks are re-entrant, hence the in-memory set). The
 * server frees every lock of a connection the moment it closes, so a replica killed mid-request leaves nothing
 * behind: a replay after its restart is answered at once, never after a lease runs out.
 */
export class PostgresClaimLocks implements ClaimLocks {
  readonly #connect: PostgresConnector;
  readonly #local = new InProcessClaimLocks();
  #client: Promise<PgClient> | null = null;
  #closed = false;

  /** `connect` opens the dedicated connection (runtime.ts builds it, with a 5 s connection timeout). */
  constructor(connect: PostgresConnector) {
    this.#connect = connect;
  }

  async tryLock(id: string): Promise<boolean> {
    if (!this.#local.tryLock(id)) return false;
    try {
      const result = await this.#query('select pg_try_advisory_lock($1::bigint) as locked', [lockKey(id)]);
      if (result.rows[0]?.locked === true) return true;
    } catch (error) {
      this.#local.unlock(id);
      throw error;
    }
    this.#local.unlock(id);
    return false;
  }

  async unlock(id: string): Promise<void> {
    // A lock lost with a dropped connection is already free.
    await this.#query('select pg_advisory_unlock($1::bigint)', [lockKey(id)]).catch(() => undefined);
    this.#local.unlock(id);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = null;
    if (client) await (await client.catch(() => null))?.end().catch(() => undefined);
  }

  async #query(text: string, values: unknown[]): Promise<QueryResult> {
    if (this.#closed) throw new DomainError('UNAVAILABLE');
    try {
      return await (await this.#connection()).query(text, values);
    } catch (error) {
      if (error instanceof DomainError) throw error;
      // The claims connection is gone or cannot be made: refuse retryably; the next request reconnects.
      this.#client = null;
      throw new DomainError('UNAVAILABLE');
    }
  }

  #connection(): Promise<PgClient> {
    if (!this.#client) {
      const client = this.#connect();
      const ready = client.connect().then(() => client);
      client.on('error', () => {
        if (this.#client === ready) this.#client = null;
      });
      client.on('end', () => {
        if (this.#client === ready) this.#client = null;
      });
      this.#client = ready;
      ready.catch(() => {
        if (this.#client === ready) this.#client = null;
      });
    }
    return this.#client;
  }
}

/** A signed 64-bit advisory lock key from the claim's identity (a collision only makes a twin wait: retryable). */
function lockKey(id: string): string {
  return createHash('sha256').update(id).digest().readBigInt64BE(0).toString();
}
