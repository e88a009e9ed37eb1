// Accounts and their credentials. Timestamps are ISO text, booleans 0/1, integers bigint.

export interface AccountsTable {
  id: string;
  /** Canonical (trimmed, lower-case) and unique. */
  email: string;
  /** Self-describing scrypt string; null for accounts that sign in another way (wallet). */
  password_hash: string | null;
  name: string | null;
  role: 'renter' | 'host' | 'admin';
  account_kind: 'human' | 'agent';
  host_enabled: bigint;
  email_verified_at: string | null;
  /** Sealed (AES-256-GCM) base32 TOTP seed once confirmed; the pending one waits for the first code. */
  totp_secret_sealed: string | null;
  totp_pending_sealed: string | null;
  /** The last TOTP time step accepted, so a code is never accepted twice. */
  totp_last_step: bigint | null;
  /** The account's spend-rate cap, micro-USDC per hour; null: the operator's default. */
  spend_cap_micro_per_hour: bigint | null;
  created_at: string;
  updated_at: string;
}

export interface SessionsTable {
  id: string;
  account_id: string;
  /** sha256 hex of the bearer token. */
  token_hash: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  step_up_method: 'password' | 'totp' | 'wallet' | 'oauth' | null;
  step_up_until: string | null;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  label: string;
  /** Sorted comma list of renter, host. */
  scopes: string;
  /** The first characters of the secret, shown in lists. */
  prefix: string;
  secret_hash: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  step_up_method: 'password' | 'totp' | 'wallet' | 'oauth' | null;
  step_up_until: string | null;
}

export interface EmailVerificationsTable {
  token_hash: string;
  account_id: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface AccountIntegrationsTable {
  account_id: string;
  provider: string;
  token_sealed: string;
  created_at: string;
  updated_at: string;
}

export interface AccountDeletionRequestsTable {
  id: string;
  account_id: string;
  state: 'PENDING' | 'COMPLETED' | 'CANCELLED';
  requested_at: string;
}

export interface WithdrawalAddressesTable {
  id: string;
  account_id: string;
  address: string;
  /** Lower-case address for the uniqueness check. */
  address_key: string;
  network: string;
  label: string | null;
  /** Starts at 1; bumped on removal so a transfer pinned to an older version is not paid automatically. */
  version: bigint;
  created_at: string;
  removed_at: string | null;
}

/** Saved SSH public keys of an account (offered by the console's rent form). */
export interface AccountSshKeysTable {
  id: string;
  account_id: string;
  label: string | null;
  public_key: string;
  /** OpenSSH's SHA256 fingerprint; unique per account. */
  fingerprint: string;
  created_at: string;
}

export interface AccountsTables {
  accounts: AccountsTable;
  sessions: SessionsTable;
  api_keys: ApiKeysTable;
  email_verifications: EmailVerificationsTable;
  account_integrations: AccountIntegrationsTable;
  account_deletion_requests: AccountDeletionRequestsTable;
  withdrawal_addresses: WithdrawalAddressesTable;
  account_ssh_keys: AccountSshKeysTable;
}
