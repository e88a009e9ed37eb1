import type { AdmissionKind } from '../../domain/admissions/admissions.js';
import type { AcceptanceAuthorizationRow, AdmissionState } from '../../store/admissions.js';
import type { CommitHook } from '../../store/transaction.js';
import { issueAcceptanceAuthorization } from './authorizations.js';
import type { AdmissionDeps } from './deps.js';
import { type PaidAdmissionGuard, paidAdmissionGuard } from './guard.js';
import { type AdmissionStatus, admissionStatus, setAdmissions } from './state.js';

export type { Admission, AdmissionRequest, PaidAdmissionGuard } from './guard.js';
export type { AdmissionStatus } from './state.js';

/** The admission switch, acceptance authorizations, and the one guard the paid operations ask. */
export interface AdmissionServices {
  guard: PaidAdmissionGuard;
  status(): Promise<AdmissionStatus>;
  set(input: { adminAccountId: string; enabled: boolean; reason: string }, commit?: CommitHook<AdmissionState>): Promise<AdmissionState>;
  issueAuthorization(
    input: { adminAccountId: string; accountId: string; kind: AdmissionKind; expiresAt: Date; reason: string },
    commit?: CommitHook<AcceptanceAuthorizationRow>,
  ): Promise<AcceptanceAuthorizationRow>;
}

export function buildAdmissionServices(deps: AdmissionDeps, guard: PaidAdmissionGuard = paidAdmissionGuard(deps)): AdmissionServices {
  return {
    guard,
    status: () => admissionStatus(deps),
    set: (input, commit) => setAdmissions(deps, input, commit),
    issueAuthorization: (input, commit) => issueAcceptanceAuthorization(deps, input, commit),
  };
}
