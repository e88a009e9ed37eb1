import { canonicalJson, UUID_PATTERN } from '@ark/shared';
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CompiledQuery, type Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { SecretBox } from '../domain/accounts/secret-box.js';
import { DomainError } from '../errors.js';
import { isUniqueViolation, type Store } from '../store/db.js';
import type { IdempotencyKeysTable } from '../store/tables/foundation.js';

/** How long a request may hold its key before a retry may take it over (a crashed replica's request). */
const LOCK_MS = 60_000;
/** Keys are kept at least 24 hours; the purge worker removes older ones. */
export const IDEMPOTENCY_RETENTION_MS = 48 * 3_600_000;

interface Claim {
  principal: string;
  route: string;
  key: string;
  requestHash: string;
  /** Whether an in-progress row was written (Postgres) or the claim lives in this process (SQLite). */
  stored: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: Claim | null;
    /** Set by the error path: a retryable failure must not be replayed. */
    discardIdempotency: boolean;
  }
}

type StoredAnswer = Selectable<IdempotencyKeysTable>;
type ClaimId = Pick<Claim, 'principal' | 'route' | 'key'>;

/** SQLite statements built once (Kysely would compile the same query on every request). */
const STORED_ANSWER_SQL = 'select * from idempotency_keys where principal = ? and route = ? and key = ?';
const ANSWER_COLUMNS = [
  'principal',
  'route',
  'key',
  'request_hash',
  'state',
  'status_code',
  'response_body',
  'locked_until',
  'created_at',
] as const satisfies ReadonlyArray<keyof IdempotencyKeysTable>;
const answerInsertSql = new Map<number, string>();
/** `insert ... values (...), (...)` for `rows` rows, built once per group size. */
function answerInsert(rows: number): string {
  let text = answerInsertSql.get(rows);
  if (text === undefined) {
    const tuple = `(${ANSWER_COLUMNS.map(() => '?').join(', ')})`;
    text = `insert into idempotency_keys (${ANSWER_COLUMNS.join(', ')}) values ${Array.from({ length: rows }, () => tuple).join(', ')}`;
    answerInsertSql.set(rows, text);
  }
  return text;
}

/** Most answers one commit writes. */
const MAX_ANSWERS_PER_COMMIT = 64;

interface PendingAnswer {
  row: Selectable<IdempotencyKeysTable>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * SQLite: answers are written with group commit. better-sqlite3 runs each request's work to the end within the turn
 * of the event loop that read it, so answers are not written at once but at the end of that turn (setImmediate):
 * the answers of every request served in the turn then go in one multi-row insert, one commit (one fsync with
 * synchronous=FULL) instead of one each. The wait is the rest of the current turn, well under a millisecond when
 * idle. Each request still waits for its own answer to be committed before its reply leaves, exactly as when it wrote
 * alone. If a group fails, each answer is retried alone, so one bad row fails only its own request.
 */
class AnswerWriter {
  readonly #store: Store;
  #pending: PendingAnswer[] = [];
  #running = false;

  constructor(store: Store) {
    this.#store = store;
  }

  write(row: Selectable<IdempotencyKeysTable>): Promise<void> {
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
      const parameters = group.flatMap((job) => ANSWER_COLUMNS.map((column) => job.row[column]));
      await db.executeQuery(CompiledQuery.raw(answerInsert(group.length), parameters));
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

/**
 * Idempotency-Key for routes with `config.idempotent`. The key is scoped to (principal, route); the stored
 * request hash decides replay (same body) or IDEMPOTENCY_CONFLICT (different body). A claim makes concurrent
 * twins get a retryable conflict, never a second effect:
 * - on PostgreSQL (several replicas) the claim is an in-progress row, taken over only after its lock lapses;
 * - on SQLite one process owns the file, so the claim is held in memory and only the answer is written:
 *   one commit per request instead of two, which matters when every commit waits for an fsync; and answers of
 *   concurrent requests share commits (AnswerWriter), so under load the layer adds a fraction of a commit.
 */
export function installIdempotency(app: FastifyInstance, store: Store, clock: Clock, secretKey: Buffer): void {
  // Stored answers can hold secrets shown once (a new API key), so they are sealed at rest.
  const box = new SecretBox(secretKey);
  const context = (claim: Pick<Claim, 'principal' | 'route' | 'key'>) => `idempotency:${claim.principal}:${claim.route}:${claim.key}`;
  const claimsInProcess = new Set<string>();
  const inProcess = store.dialect === 'sqlite';
  const answers = inProcess ? new AnswerWriter(store) : null;
  app.decorateRequest('idempotency', null);
  app.decorateRequest('discardIdempotency', false);

  const findStored = async (claim: ClaimId): Promise<StoredAnswer | undefined> =>
    inProcess
      ? (await store.db.executeQuery<StoredAnswer>(CompiledQuery.raw(STORED_ANSWER_SQL, [claim.principal, claim.route, claim.key]))).rows[0]
      : store.db
          .selectFrom('idempotency_keys')
          .selectAll()
          .where('principal', '=', claim.principal)
          .where('route', '=', claim.route)
          .where('key', '=', claim.key)
          .executeTakeFirst();

  const claimKey = async (request: FastifyRequest, reply: FastifyReply) => {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !UUID_PATTERN.test(key)) throw new DomainError('IDEMPOTENCY_KEY_REQUIRED');
    const principal = request.principal?.accountId ?? `ip:${request.ip}`;
    const route = `${request.method} ${request.routeOptions.url}`;
    const requestHash = createHash('sha256')
      .update(canonicalJson({ params: request.params ?? {}, query: request.query ?? {}, body: request.body ?? null }))
      .digest('hex');
    const now = clock.now();
    const claim: Claim = { principal, route, key: key.toLowerCase(), requestHash, stored: !inProcess };

    if (inProcess) {
      const id = context(claim);
      if (claimsInProcess.has(id)) {
        const existing = await findStored(claim);
        if (existing && existing.request_hash !== requestHash) throw new DomainError('IDEMPOTENCY_CONFLICT');
        throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
      }
      claimsInProcess.add(id);
      const existing = await findStored(claim).catch((error: unknown) => {
        claimsInProcess.delete(id);
        throw error;
      });
      if (!existing) {
        request.idempotency = claim;
        return;
      }
      claimsInProcess.delete(id);
      return answerFromStored(existing, claim, reply);
    }

    try {
      await store.db
        .insertInto('idempotency_keys')
        .values({
          principal,
          route,
          key: claim.key,
          request_hash: requestHash,
          state: 'in_progress',
          status_code: null,
          response_body: null,
          locked_until: new Date(now.getTime() + LOCK_MS).toISOString(),
          created_at: now.toISOString(),
        })
        .execute();
      request.idempotency = claim;
      return;
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
    }
    const existing = await findStored(claim);
    if (!existing) throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
    if (existing.state === 'done' || existing.request_hash !== requestHash) return answerFromStored(existing, claim, reply);
    if (existing.locked_until > now.toISOString()) throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
    // The first attempt died holding the key: take it over, once, by compare-and-set on the lock.
    const taken = await store.db
      .updateTable('idempotency_keys')
      .set({ locked_until: new Date(now.getTime() + LOCK_MS).toISOString() })
      .where('principal', '=', claim.principal)
      .where('route', '=', claim.route)
      .where('key', '=', claim.key)
      .where('state', '=', 'in_progress')
      .where('locked_until', '=', existing.locked_until)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) !== 1) throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
    request.idempotency = claim;
  };

  function answerFromStored(
    existing: { request_hash: string; state: string; status_code: bigint | null; response_body: string | null },
    claim: Claim,
    reply: FastifyReply,
  ) {
    if (existing.request_hash !== claim.requestHash) throw new DomainError('IDEMPOTENCY_CONFLICT');
    if (existing.state !== 'done') throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
    reply.header('idempotent-replayed', 'true').code(Number(existing.status_code)).type('application/json');
    return reply.send(existing.response_body ? box.open(existing.response_body, context(claim)) : '');
  }

  const storeAnswer = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const claim = request.idempotency;
    if (!claim) return payload;
    request.idempotency = null;
    try {
      const discard = reply.statusCode >= 500 || request.discardIdempotency;
      const where = <Q extends { where: (...args: any[]) => Q }>(query: Q) =>
        query.where('principal', '=', claim.principal).where('route', '=', claim.route).where('key', '=', claim.key);
      const sealed = box.seal(typeof payload === 'string' ? payload : '', context(claim));
      if (!claim.stored) {
        if (discard) return payload;
        const now = clock.now().toISOString();
        await (answers as AnswerWriter).write({
          principal: claim.principal,
          route: claim.route,
          key: claim.key,
          request_hash: claim.requestHash,
          state: 'done',
          status_code: BigInt(reply.statusCode),
          response_body: sealed,
          locked_until: now,
          created_at: now,
        });
      } else if (discard) {
        await where(store.db.deleteFrom('idempotency_keys')).execute();
      } else {
        await where(
          store.db.updateTable('idempotency_keys').set({ state: 'done', status_code: BigInt(reply.statusCode), response_body: sealed }),
        ).execute();
      }
      return payload;
    } finally {
      claimsInProcess.delete(context(claim));
    }
  };

  // Only idempotent routes get the two hooks (ahead of the route's own): every other request skips both phases.
  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    const own = <T>(hooks: T | T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]);
    route.preHandler = [claimKey, ...own(route.preHandler)] as typeof route.preHandler;
    route.onSend = [storeAnswer, ...own(route.onSend)] as typeof route.onSend;
  });
}

/** Worker step: forget keys older than the retention. */
export async function purgeIdempotencyKeys(store: Store, now: Date): Promise<number> {
  const result = await store.db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', new Date(now.getTime() - IDEMPOTENCY_RETENTION_MS).toISOString())
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
