// Admissions: whether the platform takes new paid work and new money, and the single-use acceptance authorizations
// an admin issues to let one operation of one account through while it does not. Pure: values in, decisions out.

import type { AdmissionKind } from '@ark/shared';

/** The operations the paid-admission guard stands in front of (`ADMISSION_KIND_VALUES` in @ark/shared). */
export type { AdmissionKind };

/** An authorization lives at least a minute (usable at all) and at most a week (a pause is not a standing exception). */
export const AUTHORIZATION_LIFETIME_S_MIN = 60;
export const AUTHORIZATION_LIFETIME_S_MAX = 7 * 24 * 3600;

export interface AcceptanceAuthorizationFacts {
  accountId: string;
  kind: AdmissionKind;
  expiresAt: Date;
  consumedAt: Date | null;
}

/** Why a presented authorization does not admit an operation; null when it does. */
export type AuthorizationRefusal = 'unknown' | 'other_account' | 'other_kind' | 'expired' | 'already_used';

export function authorizationRefusal(
  authorization: AcceptanceAuthorizationFacts | null,
  request: { accountId: string; kind: AdmissionKind },
  now: Date,
): AuthorizationRefusal | null {
  if (!authorization) return 'unknown';
  if (authorization.accountId !== request.accountId) return 'other_account';
  if (authorization.kind !== request.kind) return 'other_kind';
  if (authorization.consumedAt !== null) return 'already_used';
  if (authorization.expiresAt.getTime() <= now.getTime()) return 'expired';
  return null;
}

/** What a client reads when its authorization is refused: the reason, without saying whose it is. */
export function refusalMessage(refusal: AuthorizationRefusal): string {
  switch (refusal) {
    case 'unknown':
    case 'other_account':
      return 'The acceptance authorization is unknown.';
    case 'other_kind':
      return 'The acceptance authorization is for another kind of operation.';
    case 'already_used':
      return 'The acceptance authorization was already used.';
    case 'expired':
      return 'The acceptance authorization has expired.';
  }
}

/** Whether an expiry asked for is inside the allowed lifetime; the reason when it is not. */
export function expiryRefusal(expiresAt: Date, now: Date): string | null {
  const lifetimeS = (expiresAt.getTime() - now.getTime()) / 1000;
  if (lifetimeS < AUTHORIZATION_LIFETIME_S_MIN) return `must be at least ${AUTHORIZATION_LIFETIME_S_MIN} s from now`;
  if (lifetimeS > AUTHORIZATION_LIFETIME_S_MAX) return `must be at most ${AUTHORIZATION_LIFETIME_S_MAX} s (7 days) from now`;
  return null;
}
