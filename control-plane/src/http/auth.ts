import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Clock } from '../clock.js';
import { DomainError } from '../errors.js';
import type { Authenticator, Principal, Scope } from '../domain/accounts/principal.js';
import { type OwnerLookups, ownerFirstRefusal } from './owner-first.js';
import type { AuthRequirement } from './principal.js';
import { routeOptionsOf } from './route-options.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /**
     * Who may call the route: 'public', or what the caller needs (`{}`: any authenticated caller). Every route
     * declares it, reads included: a route without it fails at registration (assertAuthDeclared).
     */
    auth?: AuthRequirement;
    /** Requires an Idempotency-Key header and replays repeats. */
    idempotent?: boolean;
    /** 'public' for catalog responses (no-store); default is private account data (private, no-store). */
    cache?: 'public';
  }
}

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;

/** A route that says neither who may call it nor that it is public is a mistake caught at startup, not in production. */
export function assertAuthDeclared(route: RouteOptions): void {
  const auth = (route.config as FastifyContextConfig | undefined)?.auth;
  if (auth === 'public' || (typeof auth === 'object' && auth !== null)) return;
  throw new Error(
    `${String(route.method)} ${route.url} declares no config.auth: give its requirement (scope, admin, session...) or 'public'`,
  );
}

/** Resolves the bearer credential and enforces each route's declared requirement. */
export function installAuth(app: FastifyInstance, authenticator: Authenticator, clock: Clock, owners?: OwnerLookups): void {
  app.decorateRequest('principal', null);
  // Routes registered from here on (all of them) must declare their requirement.
  app.addHook('onRoute', assertAuthDeclared);
  // onRequest: credentials are checked before the body is even read. Callback style, so a credential verified
  // without a promise (the SQLite authenticator's cache) lets the request go on in the same turn.
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    // Unknown routes answer 404 whoever asks.
    if (request.is404) return done();
    const requirement = routeOptionsOf(request).config?.auth;
    const header = request.headers.authorization;
    if (requirement === 'public' && !header) return done();
    const now = clock.now();
    const match = header ? BEARER.exec(header) : null;
    const found = match?.[1] ? authenticator.authenticate(match[1], now) : null;
    if (found && 'then' in found) found.then((principal) => decide(request, requirement, now, principal, done, owners), done);
    else decide(request, requirement, now, found, done, owners);
  });
}

/** Admits or refuses the request once its credential is resolved. (A module function: no closure per request.) */
function decide(
  request: FastifyRequest,
  requirement: AuthRequirement | undefined,
  now: Date,
  principal: Principal | null,
  done: (error?: Error) => void,
  owners: OwnerLookups | undefined,
): void {
  request.principal = principal;
  let refusal: Error | undefined;
  try {
    if (requirement !== 'public') {
      if (!principal)
        throw new DomainError(
          'UNAUTHENTICATED',
          request.headers.authorization ? 'The credential is invalid or expired.' : 'Authentication is required.',
        );
      enforce(principal, requirement ?? {}, now);
    }
  } catch (error) {
    refusal = error as Error;
  }
  // Outside the try: what runs after this hook must not land in its catch.
  const owned = typeof requirement === 'object' ? requirement.owner : undefined;
  if (owned && principal && refusal instanceof DomainError && refusal.code === 'SCOPE_REQUIRED') {
    ownerFirstRefusal(owners, owned, request.params, principal, refusal).then(done, done);
    return;
  }
  done(refusal);
}

export function enforce(principal: Principal, requirement: Exclude<AuthRequirement, 'public'>, now: Date): void {
  if (requirement.admin) {
    if (principal.authMethod !== 'session' || principal.role !== 'admin') throw new DomainError('ADMIN_SESSION_REQUIRED');
  }
  if (requirement.session && principal.authMethod !== 'session') {
    throw new DomainError('FORBIDDEN', 'This operation needs an interactive session, not an API key.');
  }
  if (requirement.scope && !(requirement.orSession && principal.authMethod === 'session')) requireScope(principal, requirement.scope);
  if (requirement.verified && !principal.emailVerified && principal.accountKind !== 'agent') {
    throw new DomainError('EMAIL_NOT_VERIFIED');
  }
  if (requirement.stepUp) {
    const stepUp = principal.stepUp;
    const fresh = stepUp !== null && stepUp.until.getTime() > now.getTime();
    if (!fresh || (requirement.stepUp === 'totp' && stepUp?.method !== 'totp')) {
      throw new DomainError('STEP_UP_REQUIRED', requirement.stepUp === 'totp' ? 'A fresh TOTP step-up is required.' : undefined);
    }
  }
}

/**
 * Refuses a credential without `scope`: what enforce() checks for a route's declared scope, and what a handler checks
 * for a scope that depends on the body (`scopeInBody`). A scope never escalates: a step-up does not stand in for it.
 */
export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.has(scope)) throw new DomainError('SCOPE_REQUIRED', `This operation needs the ${scope} scope.`);
}

/** The caller of a route that requires authentication (every route not declared 'public'). */
export function principalOf(request: { principal: Principal | null }): Principal {
  if (!request.principal) throw new DomainError('UNAUTHENTICATED');
  return request.principal;
}

/** Owner-or-admin reads answer 404 to anyone else, so existence never leaks. */
export function assertOwnerOrAdmin(principal: Principal, ownerAccountId: string | null | undefined): void {
  if (ownerAccountId !== principal.accountId && !isAdminSession(principal)) throw new DomainError('NOT_FOUND');
}

/** An operator acting as one: the admin role, signed in with an interactive session (an admin's API key is not). */
export function isAdminSession(principal: Principal): boolean {
  return principal.role === 'admin' && principal.authMethod === 'session';
}
