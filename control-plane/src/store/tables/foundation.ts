export interface IdempotencyKeysTable {
  principal: string;
  route: string;
  key: string;
  request_hash: string;
  state: 'in_progress' | 'done';
  status_code: bigint | null;
  response_body: string | null;
  locked_until: string;
  created_at: string;
}

export interface AuditLogTable {
  id: string;
  at: string;
  actor_account_id: string | null;
  action: string;
  subject: string | null;
  detail: string;
}

export interface FoundationTables {
  idempotency_keys: IdempotencyKeysTable;
  audit_log: AuditLogTable;
}
