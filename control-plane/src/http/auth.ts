import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { DomainError } from '../errors.js';
import type { Authenticator, AuthRequirement, Principal } from './principal.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Default: any authenticated caller. */
    auth?: AuthRequirement;
    /** Requires an Idempotency-Key header and replays repeats. */
    idempotent?: boolean;
    /** 'public' for catalog responses (no-store); default is private account data (private, no-store). */
    cache?: 'public';
  }
}

const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;

/** Resolves the bearer credential and enforces each route's declared requirement. */
export function installAuth(app: FastifyInstance, authenticator: Authenticator, clock: Clock): void {
  app.decorateRequest('principal', null);
  // onRequest: credentials are checked before the body is even read.
  app.addHook('onRequest', async (request: FastifyRequest) => {
    // Unknown routes answer 404 whoever asks.
    if (request.is404) return;
    const requirement = request.routeOptions.config?.auth;
    const header = request.headers.authorization;
    if (requirement === 'public' && !header) return;
    const match = header ? BEARER.exec(header) : null;
    if (match?.[1]) request.principal = await authenticator.authenticate(match[1], clock.now());
    if (requirement === 'public') return;
    const principal = request.principal;
    if (!principal) throw new DomainError('UNAUTHENTICATED', header ? 'The credential is invalid or expired.' : 'Authentication is required.');
    enforce(principal, requirement ?? {}, clock.now());
  });
}

export function enforce(principal: Principal, requirement: Exclude<AuthRequirement, 'public'>, now: Date): void {
  if (requirement.admin) {
    if (principal.authMethod !== 'session' || principal.role !== 'admin') throw new DomainError('ADMIN_SESSION_REQUIRED');
  }
  if (requirement.session && principal.authMethod !== 'session') {
    throw new DomainError('FORBIDDEN', 'This operation needs an interactive session, not an API key.');
  }
  if (requirement.scope && !principal.scopes.has(requirement.scope)) {
    throw new DomainError('SCOPE_REQUIRED', `This operation needs the ${requirement.scope} scope.`);
  }
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

/** Owner-or-admin reads answer 404 to anyone else, so existence never leaks. */
export function assertOwnerOrAdmin(principal: Principal, ownerAccountId: string | null | undefined): void {
  const isAdmin = principal.role === 'admin' && principal.authMethod === 'session';
  if (ownerAccountId !== principal.accountId && !isAdmin) throw new DomainError('NOT_FOUND');
}
