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
 * request hash decides replay (same body) or IDEMPOTENCY_CONFLICT (different body). Inserting the
 * in-progress row is the lock: a concurrent twin sees it and gets a retryable conflict, never a second effect.
 */
export function installIdempotency(app: FastifyInstance, store: Store, clock: Clock, secretKey: Buffer): void {
  // Stored answers can hold secrets shown once (a new API key), so they are sealed at rest.
  const box = new SecretBox(secretKey);
  const context = (claim: Claim) => `idempotency:${claim.principal}:${claim.route}:${claim.key}`;
  app.decorateRequest('idempotency', null);
  app.decorateRequest('discardIdempotency', false);

  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.routeOptions.config?.idempotent) return;
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !UUID.test(key)) throw new DomainError('IDEMPOTENCY_KEY_REQUIRED');
    const principal = request.principal?.accountId ?? `ip:${request.ip}`;
    const route = `${request.method} ${request.routeOptions.url}`;
    const requestHash = createHash('sha256')
      .update(canonicalJson({ params: request.params ?? {}, query: request.query ?? {}, body: request.body ?? null }))
      .digest('hex');
    const now = clock.now();
    const claim: Claim = { principal, route, key: key.toLowerCase() };
    try {
      await store.db
        .insertInto('idempotency_keys')
        .values({
          ...claim,
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
    const existing = await store.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('principal', '=', claim.principal)
      .where('route', '=', claim.route)
      .where('key', '=', claim.key)
      .executeTakeFirst();
    if (!existing) throw new DomainError('IDEMPOTENCY_IN_PROGRESS');
    if (existing.request_hash !== requestHash) throw new DomainError('IDEMPOTENCY_CONFLICT');
    if (existing.state === 'done') {
      reply.header('idempotent-replayed', 'true').code(Number(existing.status_code)).type('application/json');
      return reply.send(existing.response_body ? box.open(existing.response_body, context(claim)) : '');
    }
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
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotency;
    if (!claim) return payload;
    request.idempotency = null;
    if (reply.statusCode >= 500 || request.discardIdempotency) {
      await store.db
        .deleteFrom('idempotency_keys')
        .where('principal', '=', claim.principal)
        .where('route', '=', claim.route)
        .where('key', '=', claim.key)
        .execute();
      return payload;
    }
    await store.db
      .updateTable('idempotency_keys')
      .set({ state: 'done', status_code: BigInt(reply.statusCode), response_body: box.seal(typeof payload === 'string' ? payload : '', context(claim)) })
      .where('principal', '=', claim.principal)
      .where('route', '=', claim.route)
      .where('key', '=', claim.key)
      .execute();
    return payload;
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
