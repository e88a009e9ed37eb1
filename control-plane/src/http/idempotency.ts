import { canonicalJson, UUID_PATTERN } from '@ark/shared';
import { hash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Clock } from '../clock.js';
import { SecretBox } from '../domain/accounts/secret-box.js';
import { DomainError } from '../errors.js';
import { isUniqueViolation, type Store } from '../store/db.js';
import {
  findStoredAnswer,
  type IdempotencyKeyId,
  insertStoredAnswers,
  type StoredAnswer,
  storedAnswerInserter,
  storedAnswerReader,
} from '../store/idempotency.js';
import type { CommitHook } from '../store/transaction.js';
import type { ClaimLocks } from './claim-locks.js';
import type { RequestEndListener } from './request-end.js';
import { routeOptionsOf } from './route-options.js';

interface Claim extends IdempotencyKeyId {
  requestHash: string;
  /** principal, route and key in one string: the claim lock's name and the sealed answer's context. */
  id: string;
  /** Whether this route's answers are sealed at rest (they may carry a secret shown once). */
  sealed: boolean;
  /** Set by the commit hook: the success answer was written inside the effect's transaction. */
  answeredStatus: number | null;
  /** Builds the hook that stores this request's answer inside a use case's transaction. */
  hook<R>(this: Claim, reply: FastifyReply, status: number, toBody: (result: R) => unknown): CommitHook<R>;
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
    if (this.#store.dialect === 'postgres') return insertStoredAnswers(this.#store.db, [row]).then(() => undefined);
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
  /** Seals stored answers that may carry a secret (a replayed key creation shows the key's secret again). */
  secretKey: Buffer;
  /**
   * Who holds each key's claim: in memory on SQLite, session advisory locks on a dedicated connection on PostgreSQL
   * (so twins on other replicas are caught too). Built and closed by the composition root (runtime.ts).
   */
  claimLocks: ClaimLocks;
}

/** Property names of an answer that hold a secret shown once (an API key's secret, a token, a TOTP seed). */
const SECRET_PROPERTY = /secret|token|password|passphrase|otpauth|private|seed|mnemonic|recovery/i;

/**
 * Whether a route's success answers may carry a secret, read from its response schemas: a property whose name
 * says so, anywhere in the answer, or anything the walk cannot see through (no schema, a reference, free-form
 * properties) counts as one. Such answers are sealed at rest; all others are stored as they were sent.
 */
export function answersMayCarrySecrets(route: Pick<RouteOptions, 'schema'>): boolean {
  const response = (route.schema as { response?: Record<string, unknown> } | undefined)?.response;
  const success = response ? Object.entries(response).filter(([status]) => status.startsWith('2') || status === 'default') : [];
  return success.length === 0 || success.some(([, schema]) => mayCarrySecret(schema, 0));
}

function mayCarrySecret(schema: unknown, depth: number): boolean {
  if (typeof schema !== 'object' || schema === null || depth > 32) return true;
  const node = schema as Record<string, unknown>;
  if (typeof node.$ref === 'string') return true;
  const properties = (node.properties ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(properties)) {
    if (SECRET_PROPERTY.test(name) || mayCarrySecret(value, depth + 1)) return true;
  }
  // Properties with names of their own (a map) could be called anything.
  if (typeof node.additionalProperties === 'object' || typeof node.patternProperties === 'object') return true;
  const nested = [node.items, ...[node.anyOf, node.oneOf, node.allOf].flatMap((list) => (Array.isArray(list) ? list : []))];
  return nested.some((child) => child !== undefined && mayCarrySecret(child, depth + 1));
}

/** How an unsealed answer is stored: sealed ones start with the SecretBox version ("v1."). */
const PLAIN = 'plain:';

/**
 * Idempotency-Key for routes with `config.idempotent`. The key is scoped to (principal, route); the stored request
 * hash decides replay (same body) or IDEMPOTENCY_CONFLICT (different body). A claim (ClaimLocks) makes a concurrent
 * twin get a retryable IDEMPOTENCY_IN_PROGRESS, never a second effect. A success answer is stored by the use case's
 * transaction through `answerInTransaction`; an answer without an effect (a refusal) is stored after the handler.
 * Returns the listener that gives back a claim left on an answered request: pass it to observeRequestEnds.
 */
export function installIdempotency(app: FastifyInstance, options: IdempotencyOptions): RequestEndListener {
  const { store, clock } = options;
  // Answers that can hold a secret shown once (a new API key) are sealed at rest, bound to their key's identity.
  const box = new SecretBox(options.secretKey);
  const locks = options.claimLocks;
  const answers = new AnswerWriter(store);
  // SQLite: the stored answer is read synchronously (storedAnswerReader); Postgres: a query.
  const readStored = storedAnswerReader(store);
  const findStored = (claim: Claim): StoredAnswer | undefined | Promise<StoredAnswer | undefined> =>
    readStored ? readStored(claim) : findStoredAnswer(store.db, claim);
  // SQLite: the answer is inserted synchronously in the use case's transaction (storedAnswerInserter); Postgres: a query.
  const insertStored = storedAnswerInserter(store);
  app.decorateRequest('idempotency', null);
  app.decorateRequest('discardIdempotency', false);

  const rowOf = (claim: Claim, status: number, payload: string): StoredAnswer => {
    const now = clock.now().toISOString();
    return {
      principal: claim.principal,
      route: claim.route,
      key: claim.key,
      request_hash: claim.requestHash,
      state: 'done',
      status_code: BigInt(status),
      // Refusals (the error envelope) never carry a secret.
      response_body: claim.sealed && status < 400 ? box.seal(payload, `idempotency:${claim.id}`) : `${PLAIN}${payload}`,
      locked_until: now,
      created_at: now,
    };
  };

  /** Gives a claim back, then `done` (synchronously where the lock is in memory). */
  const release = (claim: Claim, done: () => void) => {
    const unlocked = locks.unlock(claim.id);
    if (unlocked instanceof Promise) unlocked.then(done, done);
    else done();
  };

  /** The hook that stores a claim's answer inside a use case's transaction (a method: no closure per request). */
  function commitHook<R>(this: Claim, reply: FastifyReply, status: number, toBody: (result: R) => unknown): CommitHook<R> {
    return async (trx, result) => {
      reply.code(status);
      const body = toBody(result);
      const payload = body === undefined ? '' : String(reply.serialize(body));
      try {
        const row = rowOf(this, status, payload);
        if (insertStored) insertStored(row);
        else await insertStoredAnswers(trx, [row]);
      } catch (error) {
        // A twin's effect committed first (possible only if a claim was lost): this effect rolls back, and a retry
        // replays the twin's answer.
        if (isUniqueViolation(error)) throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
        throw error;
      }
      this.answeredStatus = status;
    };
  }

  /** The claim a request makes; throws IDEMPOTENCY_KEY_REQUIRED for a missing or malformed key. */
  const claimOf = (request: FastifyRequest, sealed: boolean): Claim => {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !UUID_PATTERN.test(key)) throw new DomainError('IDEMPOTENCY_KEY_REQUIRED');
    const principal = request.principal?.accountId ?? `ip:${request.ip}`;
    const route = `${request.method} ${routeOptionsOf(request).url}`;
    const lowerKey = key.toLowerCase();
    return {
      principal,
      route,
      key: lowerKey,
      id: `${principal}:${route}:${lowerKey}`,
      sealed,
      requestHash: hash(
        'sha256',
        canonicalJson({ params: request.params ?? {}, query: request.query ?? {}, body: request.body ?? null }),
        'hex',
      ),
      answeredStatus: null,
      hook: commitHook,
    };
  };

  /** The general path: a lock or a read that answers later (Postgres), or a twin's claim. */
  const settleClaim = async (request: FastifyRequest, reply: FastifyReply, claim: Claim, locked: boolean | Promise<boolean>) => {
    if (!(locked instanceof Promise ? await locked : locked)) {
      // A twin holds the claim: read through the store (committed rows only), not the synchronous reader.
      const existing = await findStoredAnswer(store.db, claim);
      if (existing && existing.request_hash !== claim.requestHash) throw new DomainError('IDEMPOTENCY_CONFLICT');
      throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
    }
    let existing: StoredAnswer | undefined;
    try {
      const found = findStored(claim);
      existing = found instanceof Promise ? await found : found;
    } catch (error) {
      await locks.unlock(claim.id);
      throw error;
    }
    if (!existing) {
      request.idempotency = claim;
      return;
    }
    await locks.unlock(claim.id);
    answerFromStored(existing, claim, reply);
  };

  // Callback style: on SQLite (the claim held in memory, the stored answer read synchronously) a request takes its
  // claim, or has its stored answer replayed, without a promise.
  const claimKeyOf = (sealed: boolean) => (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
    let claim: Claim;
    try {
      claim = claimOf(request, sealed);
    } catch (error) {
      return done(error as Error);
    }
    const locked = locks.tryLock(claim.id);
    if (locked === true && readStored) {
      let existing: StoredAnswer | undefined;
      try {
        existing = readStored(claim);
      } catch (error) {
        void locks.unlock(claim.id);
        return done(error as Error);
      }
      if (!existing) {
        request.idempotency = claim;
        return done();
      }
      void locks.unlock(claim.id);
      try {
        answerFromStored(existing, claim, reply);
      } catch (error) {
        return done(error as Error);
      }
      // Answered: the route's hooks and handler are skipped.
      return;
    }
    settleClaim(request, reply, claim, locked).then(() => {
      if (!reply.sent) done();
    }, done);
  };

  function answerFromStored(existing: StoredAnswer, claim: Claim, reply: FastifyReply): void {
    if (existing.request_hash !== claim.requestHash) throw new DomainError('IDEMPOTENCY_CONFLICT');
    reply.header('idempotent-replayed', 'true').code(Number(existing.status_code)).type('application/json');
    const stored = existing.response_body;
    // Sealed under this key's identity, or stored as sent; null for answers kept before bodies were (none now).
    reply.send(stored ? (stored.startsWith(PLAIN) ? stored.slice(PLAIN.length) : box.open(stored, `idempotency:${claim.id}`)) : '');
  }

  // Callback style: nothing to write (the answer committed with the effect) costs no promise.
  const storeAnswer = (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (error: Error | null, payload?: unknown) => void,
  ) => {
    const claim = request.idempotency;
    if (!claim) return done(null, payload);
    request.idempotency = null;
    // Written with the effect already, or nothing to keep: a retryable failure must run again on replay.
    if (claim.answeredStatus === reply.statusCode || reply.statusCode >= 500 || request.discardIdempotency) {
      return release(claim, () => done(null, payload));
    }
    // A refusal (nothing to commit with), or a route whose handler stores no answer itself.
    answers.write(rowOf(claim, reply.statusCode, typeof payload === 'string' ? payload : '')).then(
      () => release(claim, () => done(null, payload)),
      (error: Error) => release(claim, () => done(error)),
    );
  };

  // A request the client left before its answer still gives its claim back.
  const releaseAbandoned = (request: FastifyRequest, done: () => void) => {
    const claim = request.idempotency;
    if (!claim) return done();
    request.idempotency = null;
    release(claim, done);
  };

  // Only idempotent routes get the hooks (ahead of the route's own): every other request skips them. No onResponse
  // hook: it would cost every answer of the route Fastify's `finish` and `error` listeners (http/request-end.ts).
  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    const own = <T>(hooks: T | T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]);
    route.preHandler = [claimKeyOf(answersMayCarrySecrets(route)), ...own(route.preHandler)] as typeof route.preHandler;
    route.onSend = [storeAnswer, ...own(route.onSend)] as typeof route.onSend;
    route.onRequestAbort = [...own(route.onRequestAbort), releaseAbandoned] as typeof route.onRequestAbort;
  });

  // Every answer that leaves through Fastify passes storeAnswer, which gives the claim back; an answer that does not
  // (a hijacked reply) gives it back when it ends, so no path keeps a key busy for the rest of the process.
  return ({ request }) => {
    if (request.idempotency) releaseAbandoned(request, () => undefined);
  };
}
