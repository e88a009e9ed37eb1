import type { LedgerAccountKind } from '../../domain/ledger/accounts.js';
import type { PostingKind } from '../../domain/ledger/postings.js';

/** One ledger account with its cached balance, updated in the same transaction as each posting. */
export interface LedgerAccountsTable {
  /** `<kind>:<owner>`, see ledgerAccountKey. */
  key: string;
  owner_id: string;
  kind: LedgerAccountKind;
  /** The Ark account it belongs to (renter for available and holds, host for payable); null for platform and world. */
  account_id: string | null;
  balance_micro: bigint;
  updated_at: string;
}

/** Immutable: rows are only ever inserted (triggers refuse UPDATE and DELETE). */
export interface LedgerPostingsTable {
  id: string;
  at: string;
  from_key: string;
  to_key: string;
  amount_micro: bigint;
  kind: PostingKind;
  reference: string;
  /** Unique when set: a chain (id, tx hash, log index) or x402 nonce; a repeat posts once. */
  external_ref: string | null;
}

export interface LedgerTables {
  ledger_accounts: LedgerAccountsTable;
  ledger_postings: LedgerPostingsTable;
}
