import type { AdmissionKind } from '../../domain/admissions/admissions.js';
import type { AcceptanceAuthorizationRow, AdmissionState } from '../../store/admissions.js';
import type { CommitHook } from '../../store/transaction.js';
import { commitMapped } from '../records.js';
import { issueAcceptanceAuthorization } from './authorizations.js';
import type { AdmissionDeps } from './deps.js';
import { type PaidAdmissionGuard, paidAdmissionGuard } from './guard.js';
import { type AdmissionStatus, admissionStatus, setAdmissions } from './state.js';

export type { Admission, AdmissionRequest, PaidAdmissionGuard } from './guard.js';
export type { AdmissionStatus } from './state.js';
/** The admission switch: open or paused, by whom, when and why. */
export type AdmissionStateRecord = AdmissionState;

/** A single-use pass through a paused admission for one account and one kind of operation. */
export interface AcceptanceAuthorizationRecord {
  id: string;
  accountId: string;
  kind: AdmissionKind;
  reason: string;
  createdBy: string;
  createdAt: string;
  expiresAt: string;
  consumedAt: string | null;
}

const toAuthorizationRecord = (row: AcceptanceAuthorizationRow): AcceptanceAuthorizationRecord => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  reason: row.reason,
  createdBy: row.created_by,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  consumedAt: row.consumed_at,
});

/** The admission switch, acceptance authorizations, and the one guard the paid operations ask. */
export interface AdmissionServices {
  guard: PaidAdmissionGuard;
  status(): Promise<AdmissionStatus>;
  set(
    input: { adminAccountId: string; enabled: boolean; reason: string },
    commit?: CommitHook<AdmissionStateRecord>,
  ): Promise<AdmissionStateRecord>;
  issueAuthorization(
    input: { adminAccountId: string; accountId: string; kind: AdmissionKind; expiresAt: Date; reason: string },
    commit?: CommitHook<AcceptanceAuthorizationRecord>,
  ): Promise<AcceptanceAuthorizationRecord>;
}

export function buildAdmissionServices(deps: AdmissionDeps, guard: PaidAdmissionGuard = paidAdmissionGuard(deps)): AdmissionServices {
  return {
    guard,
    status: () => admissionStatus(deps),
    set: (input, commit) => setAdmissions(deps, input, commit),
    issueAuthorization: async (input, commit) =>
      toAuthorizationRecord(await issueAcceptanceAuthorization(deps, input, commitMapped(commit, toAuthorizationRecord))),
  };
}
