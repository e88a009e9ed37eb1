import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { SecretBox } from '../domain/accounts/secret-box.js';
import { DomainError } from '../errors.js';
import { isUniqueViolation, type Store } from '../store/db.js';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** How long a request may hold its key before a retry may take it over (a crashed replica's request). */
const LOCK_MS = 60_000;
/** Keys are kept at least 24 hours; the purge worker removes older ones. */
export const IDEMPOTENCY_RETENTION_MS = 48 * 3_600_000;

/** JSON with sorted keys, so the same body in another key order hashes the same. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

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

/**
 * Idempotency-Key for routes with `config.idempotent`. The key is scoped to (principal, route); the stored
 * request hash decides replay (same body) or IDEMPOTENCY_CONFLICT (different body). A claim makes concurrent
 * twins get a retryable conflict, never a second effect:
 * - on PostgreSQL (several replicas) the claim is an in-progress row, taken over only after its lock lapses;
 * - on SQLite one process owns the file, so the claim is held in memory and only the answer is written:
 *   one commit per request instead of two, which matters when every commit waits for an fsync.
 */
export function installIdempotency(app: FastifyInstance, store: Store, clock: Clock, secretKey: Buffer): void {
  // Stored answers can hold secrets shown once (a new API key), so they are sealed at rest.
  const box = new SecretBox(secretKey);
  const context = (claim: Pick<Claim, 'principal' | 'route' | 'key'>) => `idempotency:${claim.principal}:${claim.route}:${claim.key}`;
  const claimsInProcess = new Set<string>();
  const inProcess = store.dialect === 'sqlite';
  app.decorateRequest('idempotency', null);
  app.decorateRequest('discardIdempotency', false);

  const findStored = (claim: Pick<Claim, 'principal' | 'route' | 'key'>) =>
    store.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('principal', '=', claim.principal)
      .where('route', '=', claim.route)
      .where('key', '=', claim.key)
      .executeTakeFirst();

  const claimKey = async (request: FastifyRequest, reply: FastifyReply) => {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !UUID.test(key)) throw new DomainError('IDEMPOTENCY_KEY_REQUIRED');
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
        await store.db
          .insertInto('idempotency_keys')
          .values({
            principal: claim.principal,
            route: claim.route,
            key: claim.key,
            request_hash: claim.requestHash,
            state: 'done',
            status_code: BigInt(reply.statusCode),
            response_body: sealed,
            locked_until: now,
            created_at: now,
          })
          .execute();
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
