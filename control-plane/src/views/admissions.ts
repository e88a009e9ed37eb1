import type { AcceptanceAuthorization, AdmissionState, AdmissionStatus } from '@ark/shared';
import type {
  AcceptanceAuthorizationRecord,
  AdmissionStateRecord,
  AdmissionStatus as AdmissionStatusRecord,
} from '../services/admissions/index.js';

// Admission (issue 12) as the wire shows it (shared/src/http/admin.ts): the switch and the authorizations that pass
// it; the admin routes and `ark-cp admissions` alike.

export const admissionStateView = (state: AdmissionStateRecord): AdmissionState => ({
  enabled: state.enabled,
  reason: state.reason,
  changed_by: state.changedBy,
  changed_at: state.changedAt,
});

export const admissionStatusView = (status: AdmissionStatusRecord): AdmissionStatus => ({
  ...admissionStateView(status),
  held_deposits: Number(status.heldDeposits),
});

export const acceptanceAuthorizationView = (a: AcceptanceAuthorizationRecord): AcceptanceAuthorization => ({
  id: a.id,
  account_id: a.accountId,
  kind: a.kind,
  reason: a.reason,
  created_by: a.createdBy,
  created_at: a.createdAt,
  expires_at: a.expiresAt,
  consumed_at: a.consumedAt,
});
