import { canonicalJson, UUID_PATTERN } from '@ark/shared';
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import pg from 'pg';
import type { Clock } from '../clock.js';
import { SecretBox } from '../domain/accounts/secret-box.js';
import { DomainError } from '../errors.js';
import { isUniqueViolation, type Store } from '../store/db.js';
import { findStoredAnswer, type IdempotencyKeyId, insertStoredAnswers, type StoredAnswer } from '../store/idempotency.js';
import type { CommitHook } from '../store/transaction.js';

interface Claim extends IdempotencyKeyId {
  requestHash: string;
  /** Set by the commit hook: the success answer was written inside the effect's transaction. */
  answeredStatus: number | null;
  /** Builds the hook that stores this request's answer inside a use case's transaction. */
  hook<R>(reply: FastifyReply, status: number, toBody: (result: R) => unknown): CommitHook<R>;
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: Claim | null;
    /** Set by the error path: a retryable failure must not be replayed. */
    discardIdempotency: boolean;
  }
}

/**
 * The hook an idempotent route hands to its use case: the answer (`toBody(result)` serialized as `status` by the
 * route's response schema, sealed) is written in the use case's own transaction, after its effect. After any crash
 * a key then has either no effect and no answer (a replay runs it once) or both (a replay returns the answer).
 * Undefined when the request carries no claim (not an idempotent route, or an answer already replayed).
 */
export function answerInTransaction<R>(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  toBody: (result: R) => unknown,
): CommitHook<R> | undefined {
  return request.idempotency?.hook(reply, status, toBody);
}

/**
 * Who is working on a key right now, so that a concurrent twin is told IDEMPOTENCY_IN_PROGRESS (retryable) instead of
 * running too. A claim never outlives its process: nothing a dead process held makes a replay wait.
 * Correctness does not rest on it: an answer is inserted once per key (primary key) in the effect's transaction, so
 * of two effects racing for a key (a claims connection lost mid-request) at most one commits with its answer.
 */
interface ClaimLocks {
  tryLock(id: string): Promise<boolean>;
  unlock(id: string): Promise<void>;
  close(): Promise<void>;
}

/** SQLite: one process owns the file, so claims are held in memory. */
class InProcessClaimLocks implements ClaimLocks {
  readonly #held = new Set<string>();
  async tryLock(id: string): Promise<boolean> {
    if (this.#held.has(id)) return false;
    this.#held.add(id);
    return true;
  }
  async unlock(id: string): Promise<void> {
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
class PostgresClaimLocks implements ClaimLocks {
  readonly #url: string;
  readonly #local = new InProcessClaimLocks();
  #client: Promise<pg.Client> | null = null;
  #closed = false;

  constructor(url: string) {
    this.#url = url;
  }

  async tryLock(id: string): Promise<boolean> {
    if (!(await this.#local.tryLock(id))) return false;
    try {
      const result = await this.#query('select pg_try_advisory_lock($1::bigint) as locked', [lockKey(id)]);
      if (result.rows[0]?.locked === true) return true;
    } catch (error) {
      await this.#local.unlock(id);
      throw error;
    }
    await this.#local.unlock(id);
    return false;
  }

  async unlock(id: string): Promise<void> {
    // A lock lost with a dropped connection is already free.
    await this.#query('select pg_advisory_unlock($1::bigint)', [lockKey(id)]).catch(() => undefined);
    await this.#local.unlock(id);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = null;
    if (client) await (await client.catch(() => null))?.end().catch(() => undefined);
  }

  async #query(text: string, values: unknown[]): Promise<pg.QueryResult> {
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

  #connection(): Promise<pg.Client> {
    if (!this.#client) {
      const client = new pg.Client({ connectionString: this.#url, connectionTimeoutMillis: 5_000 });
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

/** Most answers one commit writes. */
const MAX_ANSWERS_PER_COMMIT = 64;

interface PendingAnswer {
  row: StoredAnswer;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Answers that have no effect to commit with (refusals, and routes whose handler has no transaction) are written
 * after the handler. On SQLite they use group commit: better-sqlite3 runs each request's work to the end within the
 * turn of the event loop that read it, so answers are written at the end of that turn (setImmediate), every answer
 * of the turn in one multi-row insert and one commit. Each request still waits for its own answer to be committed
 * before its reply leaves. If a group fails, each answer is retried alone, so one bad row fails only its own request.
 */
class AnswerWriter {
  readonly #store: Store;
  #pending: PendingAnswer[] = [];
  #running = false;

  constructor(store: Store) {
    this.#store = store;
  }

  write(row: StoredAnswer): Promise<void> {
    if (this.#store.dialect === 'postgres') return insertStoredAnswers(this.#store.db, 'postgres', [row]).then(() => undefined);
    return new Promise((resolve, reject) => {
      this.#pending.push({ row, resolve, reject });
      if (!this.#running) {
        this.#running = true;
        setImmediate(() => void this.#lane());
      }
    });
  }

  async #lane(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        // The group is taken once the connection is ours: answers queued while we waited for it join.
        await this.#store.db.connection().execute(async (db) => {
          await this.#insert(db, this.#pending.splice(0, MAX_ANSWERS_PER_COMMIT), true);
        });
      }
    } catch (error) {
      // The connection itself failed: whoever is still waiting hears it.
      for (const job of this.#pending.splice(0)) job.reject(error);
    } finally {
      // In the same microtask as the last emptiness check: an answer queued after it starts a new lane.
      this.#running = false;
    }
  }

  async #insert(db: Store['db'], group: PendingAnswer[], retryAlone: boolean): Promise<void> {
    try {
      await insertStoredAnswers(
        db,
        this.#store.dialect,
        group.map((job) => job.row),
      );
    } catch (error) {
      if (group.length === 1 || !retryAlone) {
        for (const job of group) job.reject(error);
        return;
      }
      for (const job of group) await this.#insert(db, [job], false);
      return;
    }
    for (const job of group) job.resolve();
  }
}

export interface IdempotencyOptions {
  store: Store;
  clock: Clock;
  /** Seals stored answers: a replayed key creation carries the secret. */
  secretKey: Buffer;
  /** The Postgres URL claims are held on (a dedicated connection); null on SQLite. */
  databaseUrl: string | null;
}

/**
 * Idempotency-Key for routes with `config.idempotent`. The key is scoped to (principal, route); the stored request
 * hash decides replay (same body) or IDEMPOTENCY_CONFLICT (different body). A claim (ClaimLocks) makes a concurrent
 * twin get a retryable IDEMPOTENCY_IN_PROGRESS, never a second effect. A success answer is stored by the use case's
 * transaction through `answerInTransaction`; an answer without an effect (a refusal) is stored after the handler.
 */
export function installIdempotency(app: FastifyInstance, options: IdempotencyOptions): void {
  const { store, clock } = options;
  // Stored answers can hold secrets shown once (a new API key), so they are sealed at rest.
  const box = new SecretBox(options.secretKey);
  const context = (claim: IdempotencyKeyId) => `idempotency:${claim.principal}:${claim.route}:${claim.key}`;
  const locks: ClaimLocks =
    store.dialect === 'postgres' && options.databaseUrl ? new PostgresClaimLocks(options.databaseUrl) : new InProcessClaimLocks();
  const answers = new AnswerWriter(store);
  app.decorateRequest('idempotency', null);
  app.decorateRequest('discardIdempotency', false);
  app.addHook('onClose', async () => {
    await locks.close();
  });

  const rowOf = (claim: Claim, status: number, payload: string): StoredAnswer => {
    const now = clock.now().toISOString();
    return {
      principal: claim.principal,
      route: claim.route,
      key: claim.key,
      request_hash: claim.requestHash,
      state: 'done',
      status_code: BigInt(status),
      response_body: box.seal(payload, context(claim)),
      locked_until: now,
      created_at: now,
    };
  };

  const claimKey = async (request: FastifyRequest, reply: FastifyReply) => {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !UUID_PATTERN.test(key)) throw new DomainError('IDEMPOTENCY_KEY_REQUIRED');
    const requestHash = createHash('sha256')
      .update(canonicalJson({ params: request.params ?? {}, query: request.query ?? {}, body: request.body ?? null }))
      .digest('hex');
    const claim: Claim = {
      principal: request.principal?.accountId ?? `ip:${request.ip}`,
      route: `${request.method} ${request.routeOptions.url}`,
      key: key.toLowerCase(),
      requestHash,
      answeredStatus: null,
      hook: (hookReply, status, toBody) => async (trx, result) => {
        hookReply.code(status);
        const body = toBody(result);
        const payload = body === undefined ? '' : String(hookReply.serialize(body));
        try {
          await insertStoredAnswers(trx, store.dialect, [rowOf(claim, status, payload)]);
        } catch (error) {
          // A twin's effect committed first (possible only if a claim was lost): this effect rolls back, and a retry
          // replays the twin's answer.
          if (isUniqueViolation(error)) throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
          throw error;
        }
        claim.answeredStatus = status;
      },
    };
    const id = context(claim);
    if (!(await locks.tryLock(id))) {
      const existing = await findStoredAnswer(store.db, store.dialect, claim);
      if (existing && existing.request_hash !== requestHash) throw new DomainError('IDEMPOTENCY_CONFLICT');
      throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
    }
    let existing: StoredAnswer | undefined;
    try {
      existing = await findStoredAnswer(store.db, store.dialect, claim);
    } catch (error) {
      await locks.unlock(id);
      throw error;
    }
    if (!existing) {
      request.idempotency = claim;
      return;
    }
    await locks.unlock(id);
    return answerFromStored(existing, claim, reply);
  };

  function answerFromStored(existing: StoredAnswer, claim: Claim, reply: FastifyReply) {
    if (existing.request_hash !== claim.requestHash) throw new DomainError('IDEMPOTENCY_CONFLICT');
    reply.header('idempotent-replayed', 'true').code(Number(existing.status_code)).type('application/json');
    return reply.send(existing.response_body ? box.open(existing.response_body, context(claim)) : '');
  }

  const storeAnswer = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const claim = request.idempotency;
    if (!claim) return payload;
    request.idempotency = null;
    try {
      // Written with the effect already, or nothing to keep: a retryable failure must run again on replay.
      if (claim.answeredStatus === reply.statusCode) return payload;
      if (reply.statusCode >= 500 || request.discardIdempotency) return payload;
      // A refusal (nothing to commit with), or a route whose handler stores no answer itself.
      await answers.write(rowOf(claim, reply.statusCode, typeof payload === 'string' ? payload : ''));
      return payload;
    } finally {
      await locks.unlock(context(claim));
    }
  };

  // A request that ends without reaching onSend (the client went away) still gives its claim back.
  const releaseAbandoned = async (request: FastifyRequest) => {
    const claim = request.idempotency;
    if (!claim) return;
    request.idempotency = null;
    await locks.unlock(context(claim));
  };

  // Only idempotent routes get the hooks (ahead of the route's own): every other request skips them.
  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    const own = <T>(hooks: T | T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]);
    route.preHandler = [claimKey, ...own(route.preHandler)] as typeof route.preHandler;
    route.onSend = [storeAnswer, ...own(route.onSend)] as typeof route.onSend;
    route.onResponse = [...own(route.onResponse), releaseAbandoned] as typeof route.onResponse;
    route.onRequestAbort = [...own(route.onRequestAbort), releaseAbandoned] as typeof route.onRequestAbort;
  });
}
