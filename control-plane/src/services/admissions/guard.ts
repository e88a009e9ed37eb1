import { type AdmissionKind, authorizationRefusal, refusalMessage } from '../../domain/admissions/admissions.js';
import { DomainError } from '../../errors.js';
import {
  consumeAcceptanceAuthorization,
  findAcceptanceAuthorization,
  openAuthorizationOf,
  readAdmissionState,
} from '../../store/admissions.js';
import type { Executor } from '../../store/db.js';
import type { Clock } from '../../clock.js';

export interface AdmissionRequest {
  /** Whose operation it is: an authorization admits only its own account's. */
  accountId: string;
  kind: AdmissionKind;
  /** The acceptance authorization id the client presented (the `Ark-Acceptance-Authorization` header), if any. */
  authorization?: string | null;
  /**
   * For an operation no client presents anything on (a deposit's credit): with none presented, consume the oldest
   * valid authorization the account holds for this kind.
   */
  anyOfAccount?: boolean;
  /** What the operation is (a job id, a machine id, a deposit id): recorded on the authorization it consumes. */
  reference?: string | null;
}

/** How an operation got in: admission was open, or it consumed this authorization. */
export type Admission = { via: 'open' } | { via: 'authorization'; authorizationId: string };

/**
 * The one paid-admission guard (contract part 4, Administration): every funding credit, reservation, host offer
 * publication, payout and withdrawal asks it inside its own transaction. While admission is open it admits
 * everything and consumes nothing. Call it with the operation's transaction (an Executor that is one). While it is paused it admits only an operation that consumes a valid acceptance
 * authorization, in the caller's transaction, so the authorization is spent exactly when the operation commits (a
 * rolled-back operation leaves it unused).
 */
export interface PaidAdmissionGuard {
  /** Admits or throws ADMISSIONS_PAUSED (503, retryable) / ACCEPTANCE_AUTHORIZATION_INVALID (403). */
  admit(trx: Executor, request: AdmissionRequest): Promise<Admission>;
  /** Like admit, but answers null instead of refusing (a deposit is HELD rather than refused). */
  tryAdmit(trx: Executor, request: AdmissionRequest): Promise<Admission | null>;
}

export function paidAdmissionGuard(deps: { clock: Clock }): PaidAdmissionGuard {
  async function decide(trx: Executor, request: AdmissionRequest, refuse: boolean): Promise<Admission | null> {
    const state = await readAdmissionState(trx, 'share');
    if (state.enabled) return { via: 'open' };
    const now = deps.clock.now();
    const reference = request.reference ?? null;
    let id = request.authorization ?? null;
    if (id === null && request.anyOfAccount) id = await openAuthorizationOf(trx, request.accountId, request.kind, now);
    if (id === null) {
      if (!refuse) return null;
      throw new DomainError('ADMISSIONS_PAUSED');
    }
    if (await consumeAcceptanceAuthorization(trx, { id, accountId: request.accountId, kind: request.kind, now, reference })) {
      return { via: 'authorization', authorizationId: id };
    }
    if (!refuse) return null;
    const found = await findAcceptanceAuthorization(trx, id);
    const refusal =
      authorizationRefusal(
        found && {
          accountId: found.account_id,
          kind: found.kind,
          expiresAt: new Date(found.expires_at),
          consumedAt: found.consumed_at === null ? null : new Date(found.consumed_at),
        },
        request,
        now,
      ) ?? 'already_used';
    throw new DomainError('ACCEPTANCE_AUTHORIZATION_INVALID', refusalMessage(refusal));
  }
  return {
    admit: async (trx, request) => (await decide(trx, request, true)) as Admission,
    tryAdmit: (trx, request) => decide(trx, request, false),
  };
}
