import type { AdmissionKind } from '../../domain/admissions/admissions.js';

/** One row (id 'platform'): whether public admission is open, and who set it last and why. */
export interface AdmissionStateTable {
  id: string;
  /** 0/1. */
  enabled: bigint;
  reason: string | null;
  changed_by: string | null;
  changed_at: string | null;
  /** Bumped by every change. */
  version: bigint;
}

/** A single-use pass through a paused admission, for one account and one kind of operation, until it expires. */
export interface AcceptanceAuthorizationsTable {
  id: string;
  account_id: string;
  kind: AdmissionKind;
  reason: string;
  created_by: string;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
  /** What it let through (a job id, a machine id, a deposit id). */
  consumed_reference: string | null;
}

export interface AdmissionsTables {
  admission_state: AdmissionStateTable;
  acceptance_authorizations: AcceptanceAuthorizationsTable;
}
