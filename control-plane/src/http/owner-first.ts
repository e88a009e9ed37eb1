import { DomainError } from '../errors.js';
import type { Principal } from '../domain/accounts/principal.js';
import { isAdminSession } from './auth.js';
import type { OwnedResource } from './principal.js';

/** Who owns the resource an id names (null when none exists), per kind a route may declare in `config.auth.owner`. */
export type OwnerLookups = Record<OwnedResource, (id: string) => Promise<string | null>>;

/**
 * A caller refused for its key's scope on a route that names an owned resource: a caller who neither owns it nor
 * acts as an admin gets 404, as it would with the scope (contract: "a non-owner gets 404, never 403"); the owner
 * (or an admin) gets the scope refusal, which says what its key lacks. Ownership is judged before the scope so the
 * two answers a stranger can get are one: which ids exist never leaks, and neither does a missing lookup.
 */
export async function ownerFirstRefusal(
  lookups: OwnerLookups | undefined,
  resource: OwnedResource,
  params: unknown,
  principal: Principal,
  scopeRefusal: Error,
): Promise<Error> {
  const id = typeof params === 'object' && params !== null ? (params as Record<string, unknown>).id : undefined;
  const lookup = lookups?.[resource];
  // Fail closed: without a way to tell the owner, nobody gets past the refusal.
  if (typeof id !== 'string' || !lookup) return new DomainError('NOT_FOUND');
  const owner = await lookup(id);
  if (owner === null || (owner !== principal.accountId && !isAdminSession(principal))) return new DomainError('NOT_FOUND');
  return scopeRefusal;
}
