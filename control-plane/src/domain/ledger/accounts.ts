// Ledger accounts are (owner, kind). Pure rules only: no store, no clock.

export const LEDGER_ACCOUNT_KINDS = ['available', 'hold', 'pending', 'payable', 'fees', 'external', 'adjustment', 'lock'] as const;
export type LedgerAccountKind = (typeof LEDGER_ACCOUNT_KINDS)[number];

/** Owner of the platform-wide accounts (fees, admin adjustments). */
export const PLATFORM_OWNER = 'platform';
/** Default owner of the `external` account: the world outside the ledger. */
export const WORLD_OWNER = 'world';

/** One side of a transfer. */
export interface LedgerAccountRef {
  kind: LedgerAccountKind;
  /** The renter account (available), the job (hold), the host account (pending, payable), or a platform/world owner. */
  owner: string;
  /** The Ark account this ledger account belongs to, so a renter's job holds can be summed; null for platform and world. */
  accountId: string | null;
}

// Owners go into keys and lock ordering; a tight alphabet keeps byte order and JS order identical.
const OWNER = /^[A-Za-z0-9._@:-]{1,200}$/;

/** The stable primary key of a ledger account, e.g. `available:<account uuid>`, `hold:<job uuid>`. */
export function ledgerAccountKey(owner: string, kind: LedgerAccountKind): string {
  if (!OWNER.test(owner)) throw new RangeError(`invalid ledger owner: ${JSON.stringify(owner)}`);
  return `${kind}:${owner}`;
}

/**
 * The platform's fees are spread over this many accounts (`fees:platform`, then `fees:platform.1` ...). Every metered
 * charge credits a fees account, so with one account every replica's charges queue on one row lock (Postgres); each
 * charging transaction takes one shard (store/job-charges.ts), so concurrent groups rarely share one. The fees earned
 * are the sum over the kind, as every summary reads them (store/ledger-summary.ts).
 */
export const FEE_SHARDS = 16;

/** The shard of a fees account's owner (the inverse of `ledgerAccounts.fees`), or null for an owner that is none. */
export function feeShardOf(owner: string): number | null {
  if (owner === PLATFORM_OWNER) return 0;
  const prefix = `${PLATFORM_OWNER}.`;
  if (!owner.startsWith(prefix)) return null;
  const shard = Number(owner.slice(prefix.length));
  // The round trip refuses spellings the constructor never writes ('platform.01', 'platform.1.0').
  return Number.isInteger(shard) && shard >= 1 && shard < FEE_SHARDS && ledgerAccounts.fees(shard).owner === owner ? shard : null;
}

/** The world's side (external) and the admin side (adjustment) are signed; every account of a person or job is not. */
export function mayGoNegative(kind: LedgerAccountKind): boolean {
  return kind === 'external' || kind === 'adjustment';
}

/** Constructors for the accounts DESIGN.md names, so callers never spell owners by hand. */
export const ledgerAccounts = {
  available: (renterAccountId: string): LedgerAccountRef => ({ kind: 'available', owner: renterAccountId, accountId: renterAccountId }),
  hold: (jobId: string, renterAccountId: string): LedgerAccountRef => ({ kind: 'hold', owner: jobId, accountId: renterAccountId }),
  /** A host's earnings not matured yet (issue 24): charges land here and move to payable after ARK_EARNINGS_MATURITY_S. */
  pending: (hostAccountId: string): LedgerAccountRef => ({ kind: 'pending', owner: hostAccountId, accountId: hostAccountId }),
  payable: (hostAccountId: string): LedgerAccountRef => ({ kind: 'payable', owner: hostAccountId, accountId: hostAccountId }),
  /** Shard 0, the default, is the original `fees:platform`; FEE_SHARDS says why there are others. */
  fees: (shard = 0): LedgerAccountRef => {
    if (!Number.isInteger(shard) || shard < 0 || shard >= FEE_SHARDS) throw new RangeError(`invalid fees shard: ${shard}`);
    return { kind: 'fees', owner: shard === 0 ? PLATFORM_OWNER : `${PLATFORM_OWNER}.${shard}`, accountId: null };
  },
  /** `source` may name the rail (e.g. a chain id) when per-rail totals are wanted. */
  external: (source: string = WORLD_OWNER): LedgerAccountRef => ({ kind: 'external', owner: source, accountId: null }),
  adjustment: (): LedgerAccountRef => ({ kind: 'adjustment', owner: PLATFORM_OWNER, accountId: null }),
  /** The money of one withdrawal or payout request, locked from the request until it is paid or fails. */
  lock: (withdrawalId: string, accountId: string): LedgerAccountRef => ({ kind: 'lock', owner: withdrawalId, accountId }),
} as const;
