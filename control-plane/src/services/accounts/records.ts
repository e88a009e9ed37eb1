import type { ApiKeyScope } from '@ark/shared';
import { type AccountFacts, decodeScopes } from '../../domain/accounts/account.js';
import { type AccountRow, accountFacts } from '../../store/accounts.js';
import type { ApiKeyRow } from '../../store/accounts-credentials.js';
import type { AccountWalletRow } from '../../store/agent-wallets.js';
import type { AuditRow } from '../../store/audit.js';
import type { WithdrawalAddressRow } from '../../store/withdrawal-addresses.js';
import type { CreatedApiKey } from './api-keys.js';

// The account services' records: what routes, `ark-cp` and views see of an account's rows.

/** A live address in the account's withdrawal address book. Times are the stored RFC 3339 text. */
export interface WithdrawalAddressRecord {
  id: string;
  accountId: string;
  address: string;
  network: string;
  label: string | null;
  /** Starts at 1; bumped on removal so a transfer pinned to an older version is not paid automatically. */
  version: bigint;
  createdAt: string;
}

export const toWithdrawalAddressRecord = (row: WithdrawalAddressRow): WithdrawalAddressRecord => ({
  id: row.id,
  accountId: row.account_id,
  address: row.address,
  network: row.network,
  label: row.label,
  version: row.version,
  createdAt: row.created_at,
});

/** An account as the services hand it out: the domain's facts about it (domain/accounts/account.ts). */
export type AccountRecord = AccountFacts;

export const toAccountRecord = (row: AccountRow): AccountRecord => accountFacts(row);

/** An API key, never its secret or hash. */
export interface ApiKeyRecord {
  id: string;
  accountId: string;
  label: string;
  scopes: ApiKeyScope[];
  /** The first characters of the secret, shown in lists. */
  prefix: string;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

export const toApiKeyRecord = (row: ApiKeyRow): ApiKeyRecord => ({
  id: row.id,
  accountId: row.account_id,
  label: row.label,
  scopes: decodeScopes(row.scopes),
  prefix: row.prefix,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  lastUsedAt: row.last_used_at,
});

/** A key just created, with its secret: shown exactly once; only its hash is stored. */
export interface IssuedApiKey {
  key: ApiKeyRecord;
  secret: string;
}

export const toIssuedApiKey = (created: CreatedApiKey): IssuedApiKey => ({ key: toApiKeyRecord(created.row), secret: created.secret });

/** An agent's sign-in wallet and the profile it registered with. */
export interface AgentWalletRecord {
  address: string;
  agentName: string;
  agentVendor: string;
  agentModel: string;
}

export const toAgentWalletRecord = (row: AccountWalletRow): AgentWalletRecord => ({
  address: row.address,
  agentName: row.agent_name,
  agentVendor: row.agent_vendor,
  agentModel: row.agent_model,
});

/** One entry of the audit log. */
export interface AuditRecord {
  id: string;
  at: string;
  actorAccountId: string | null;
  action: string;
  subject: string | null;
  detail: Record<string, unknown>;
}

export const toAuditRecord = (row: AuditRow): AuditRecord => ({
  id: row.id,
  at: row.at,
  actorAccountId: row.actor_account_id,
  action: row.action,
  subject: row.subject,
  detail: JSON.parse(row.detail) as Record<string, unknown>,
});
