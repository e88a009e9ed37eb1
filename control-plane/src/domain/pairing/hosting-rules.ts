import { DomainError } from '../../errors.js';
import { NEW_HOST_WINDOW_MS } from './pairing.js';

// The hosting rules (contract part 4): verified email, host scope, admin block, new-host cap. Applied when a
// pairing is approved or an enrollment token is created, and again when a pairing hands out its token.

export interface HostingFacts {
  emailVerified: boolean;
  /** The credential acting (or the one that approved) carries the host scope. */
  hasHostScope: boolean;
  blocked: boolean;
  /** When hosting was first used; null before the first use. */
  hostingStartedAt: Date | null;
  /** Machines granted (approved pairings and enrollment tokens still usable or used) since hosting started. */
  grantsSinceStart: number;
}

export type HostingRefusal = 'EMAIL_NOT_VERIFIED' | 'HOSTING_SCOPE_REVOKED' | 'HOSTING_BLOCKED' | 'NEW_HOST_MACHINE_CAP_REACHED';

/**
 * Null when one more machine may be granted now, else the first rule that refuses. `newHostMachineCap` counts
 * machines in the first 24 hours of hosting; a host that has not started yet is at the very beginning.
 */
export function checkHostingRules(facts: HostingFacts, now: Date, newHostMachineCap: number): HostingRefusal | null {
  if (facts.blocked) return 'HOSTING_BLOCKED';
  if (!facts.emailVerified) return 'EMAIL_NOT_VERIFIED';
  if (!facts.hasHostScope) return 'HOSTING_SCOPE_REVOKED';
  if (isNewHost(facts.hostingStartedAt, now) && facts.grantsSinceStart >= newHostMachineCap) return 'NEW_HOST_MACHINE_CAP_REACHED';
  return null;
}

export function isNewHost(hostingStartedAt: Date | null, now: Date): boolean {
  return hostingStartedAt === null || now.getTime() < hostingStartedAt.getTime() + NEW_HOST_WINDOW_MS;
}

const REFUSAL_MESSAGES: Record<HostingRefusal, string> = {
  EMAIL_NOT_VERIFIED: 'Hosting needs a verified email address.',
  HOSTING_SCOPE_REVOKED: 'The credential that approved this pairing no longer carries the host scope.',
  HOSTING_BLOCKED: 'Hosting is blocked for this account.',
  NEW_HOST_MACHINE_CAP_REACHED: 'A new host may pair only a limited number of machines in its first 24 hours of hosting.',
};

/** Throws the refusal as a DomainError, or returns when one more machine may be granted. */
export function assertHostingAllowed(facts: HostingFacts, now: Date, newHostMachineCap: number): void {
  const refusal = checkHostingRules(facts, now, newHostMachineCap);
  if (refusal) throw new DomainError(refusal, REFUSAL_MESSAGES[refusal]);
}
