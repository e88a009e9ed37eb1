import { type Static, Type } from '@sinclair/typebox';
import { EvmAddress, MicroTotal, Nullable, Rfc3339Utc, Uuid } from '../formats.js';

// Operator controls (issue 12): the admission switch, acceptance authorizations, subsystem tests and the platform's
// books. The contract fixes the request bodies of admissions and settings tests and the test's answer; the rest is
// the shape it leaves open.

export const ADMISSION_KIND_VALUES = ['reservation', 'offer_publication', 'funding_credit', 'withdrawal', 'payout'] as const;
export const AdmissionKind = Type.Union(
  [
    Type.Literal('reservation'),
    Type.Literal('offer_publication'),
    Type.Literal('funding_credit'),
    Type.Literal('withdrawal'),
    Type.Literal('payout'),
  ],
  { description: 'The paid operation an acceptance authorization lets through while admission is paused' },
);
export type AdmissionKind = Static<typeof AdmissionKind>;

/** Contract part 4: `{enabled: boolean, reason: string min length 1}`. */
export const AdmissionsSetRequest = Type.Object(
  {
    enabled: Type.Boolean({ description: 'true resumes public admission, false pauses it' }),
    reason: Type.String({ minLength: 1, maxLength: 2000 }),
  },
  { additionalProperties: false },
);
export type AdmissionsSetRequest = Static<typeof AdmissionsSetRequest>;

export const AdmissionState = Type.Object(
  {
    enabled: Type.Boolean(),
    reason: Nullable(Type.String()),
    changed_by: Nullable(Uuid),
    changed_at: Nullable(Rfc3339Utc),
  },
  { additionalProperties: false },
);
export type AdmissionState = Static<typeof AdmissionState>;

/** GET /api/v1/admin/admissions: the state, and what waits on it. */
export const AdmissionStatus = Type.Object(
  {
    ...AdmissionState.properties,
    /** Deposits HELD now: over a balance cap, or arrived while admission was paused (credited on resume). */
    held_deposits: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type AdmissionStatus = Static<typeof AdmissionStatus>;

/** The header a client presents an acceptance authorization's id in, on the operation it authorizes. */
export const ACCEPTANCE_AUTHORIZATION_HEADER = 'ark-acceptance-authorization';

/** Idempotency-Key plus an optional acceptance authorization: the headers of a paid, idempotent operation. */
export const AdmittedIdempotencyHeaders = Type.Object({
  'idempotency-key': Type.String({ description: 'UUID; scoped to principal, route and request hash' }),
  [ACCEPTANCE_AUTHORIZATION_HEADER]: Type.Optional(
    Type.String({
      ...Uuid,
      description: 'While admission is paused: the id of an acceptance authorization issued to this account for this kind of operation',
    }),
  ),
});

export const AcceptanceAuthorizationCreateRequest = Type.Object(
  {
    account_id: Uuid,
    kind: AdmissionKind,
    /** At least a minute and at most 7 days from now. */
    expires_at: Rfc3339Utc,
    reason: Type.String({ minLength: 1, maxLength: 2000 }),
  },
  { additionalProperties: false },
);
export type AcceptanceAuthorizationCreateRequest = Static<typeof AcceptanceAuthorizationCreateRequest>;

export const AcceptanceAuthorization = Type.Object(
  {
    id: Uuid,
    account_id: Uuid,
    kind: AdmissionKind,
    reason: Type.String(),
    created_by: Uuid,
    created_at: Rfc3339Utc,
    expires_at: Rfc3339Utc,
    consumed_at: Nullable(Rfc3339Utc),
  },
  { additionalProperties: false },
);
export type AcceptanceAuthorization = Static<typeof AcceptanceAuthorization>;

/** Contract part 4: the target always comes from the stored settings, never from this body. */
export const SettingsTestRequest = Type.Object(
  {
    subsystem: Type.Union([Type.Literal('mail'), Type.Literal('alerts'), Type.Literal('chain-access'), Type.Literal('auth-provider')]),
    provider: Type.Optional(Type.Union([Type.Literal('github'), Type.Literal('google')])),
  },
  { additionalProperties: false },
);
export type SettingsTestRequest = Static<typeof SettingsTestRequest>;

export const SettingsTestResult = Type.Object({ ok: Type.Boolean(), detail: Type.String() }, { additionalProperties: false });
export type SettingsTestResult = Static<typeof SettingsTestResult>;

const Day = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'a UTC day, YYYY-MM-DD' });

export const LedgerSummaryQuery = Type.Object(
  {
    /** First UTC day (inclusive); default 29 days before `to`. */
    from: Type.Optional(Day),
    /** Last UTC day (inclusive); default today. At most 366 days after `from`. */
    to: Type.Optional(Day),
  },
  { additionalProperties: false },
);
export type LedgerSummaryQuery = Static<typeof LedgerSummaryQuery>;

export const LedgerSummaryDay = Type.Object(
  {
    day: Day,
    /** Metered fee shares posted to the platform's fees account. */
    fees_earned_micro: MicroTotal,
    /** Money that came in from `external` (deposits, x402 top-ups) and from `adjustment` (operator credits, platform-paid job credits). */
    money_in_micro: MicroTotal,
    /** Money that went out to `external` (withdrawals, payouts) or back to `adjustment`. */
    money_out_micro: MicroTotal,
    postings: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type LedgerSummaryDay = Static<typeof LedgerSummaryDay>;

export const LedgerSummary = Type.Object(
  {
    as_of: Rfc3339Utc,
    from: Day,
    to: Day,
    /** Balances now, summed per kind of account. */
    totals: Type.Object(
      {
        available_micro: MicroTotal,
        held_micro: MicroTotal,
        /** Host earnings not matured yet (issue 24). */
        pending_micro: MicroTotal,
        payable_micro: MicroTotal,
        locked_micro: MicroTotal,
        fees_micro: MicroTotal,
        money_in_micro: MicroTotal,
        money_out_micro: MicroTotal,
      },
      { additionalProperties: false },
    ),
    /** Whether every balance of the ledger sums to zero (renters + hosts + fees + locks = money in - money out + adjustments). */
    balanced: Type.Boolean(),
    /** One entry per UTC day of [from, to] with any posting, oldest first. */
    days: Type.Array(LedgerSummaryDay),
  },
  { additionalProperties: false },
);
export type LedgerSummary = Static<typeof LedgerSummary>;

const Count = Type.Integer({ minimum: 0 });

/** Machines per go-live state (every state present, zero included). */
export const FleetMachineStates = Type.Object({ waiting: Count, live: Count, failed: Count, off: Count }, { additionalProperties: false });
export type FleetMachineStates = Static<typeof FleetMachineStates>;

/** Jobs per state (every state of the job state machine present, zero included). */
export const FleetJobStates = Type.Object(
  {
    RESERVED: Count,
    STARTING: Count,
    RUNNING: Count,
    STOPPING: Count,
    STOPPED: Count,
    CLEANING: Count,
    CLOSED: Count,
    FAILED: Count,
    RECONCILING: Count,
  },
  { additionalProperties: false },
);
export type FleetJobStates = Static<typeof FleetJobStates>;

/** A signed micro-USD figure (a surplus is positive, a deficit negative). */
const SignedMicro = Type.String({ pattern: '^(0|-?[1-9][0-9]{0,18})$', description: 'micro-USD, signed: a base-10 integer string' });
/** A token amount in its smallest unit (an 18-decimal token's exceed 64 bits). */
const RawAmount = Type.String({ pattern: '^(0|[1-9][0-9]{0,77})$', description: "the asset's smallest unit: a base-10 integer string" });

/** One asset's holdings on one network at the read block, per place. */
export const TreasuryAssetHoldings = Type.Object(
  {
    symbol: Type.String(),
    /** stablecoin: compared with the liabilities 1:1; native: information only. */
    kind: Type.Union([Type.Literal('stablecoin'), Type.Literal('native')]),
    token: Nullable(EvmAddress),
    decimals: Type.Integer({ minimum: 0 }),
    treasury_raw: RawAmount,
    payout_wallet_raw: RawAmount,
    deposit_addresses_raw: RawAmount,
    total_raw: RawAmount,
    /** The total in micro-USD: 1:1 for a stablecoin, at the oracle price for a native coin, null without a price. */
    value_micro: Nullable(MicroTotal),
  },
  { additionalProperties: false },
);
export type TreasuryAssetHoldings = Static<typeof TreasuryAssetHoldings>;

/**
 * A reconciliation of the chain with the ledger (issue 22): per network the holdings at a finalized block, against
 * what the ledger owes. `ark-cp treasury reconcile` prints it; GET /api/v1/admin/fleet carries this process's last one.
 */
export const TreasuryReconciliation = Type.Object(
  {
    at: Rfc3339Utc,
    trigger: Type.Union([Type.Literal('worker'), Type.Literal('cli')]),
    status: Type.Union([Type.Literal('balanced'), Type.Literal('surplus'), Type.Literal('deficit')]),
    asset: Type.Literal('USD'),
    liabilities: Type.Object(
      {
        available_micro: MicroTotal,
        held_micro: MicroTotal,
        /** Host earnings not matured yet (issue 24). */
        pending_micro: MicroTotal,
        payable_micro: MicroTotal,
        locked_micro: MicroTotal,
        /** Locks of withdrawals and payouts signed or broadcast: possibly already paid on chain. */
        in_flight_micro: MicroTotal,
        total_micro: MicroTotal,
        /** total less in flight: what the chain must hold. */
        owed_micro: MicroTotal,
      },
      { additionalProperties: false },
    ),
    stablecoins_micro: MicroTotal,
    surplus_micro: SignedMicro,
    deficit_micro: MicroTotal,
    native_value_micro: Nullable(MicroTotal),
    networks: Type.Array(
      Type.Object(
        {
          network: Type.String(),
          chain_id: Type.Integer({ minimum: 1 }),
          block_number: Type.String({ pattern: '^(0|[1-9][0-9]{0,19})$' }),
          block_hash: Type.String({ pattern: '^0x[0-9a-f]{64}$' }),
          assets: Type.Array(TreasuryAssetHoldings),
        },
        { additionalProperties: false },
      ),
    ),
    addresses: Type.Integer({ minimum: 0 }),
    deposit_addresses: Type.Integer({ minimum: 0 }),
    multicalls: Type.Integer({ minimum: 0 }),
    duration_ms: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type TreasuryReconciliation = Static<typeof TreasuryReconciliation>;

/** GET /api/v1/admin/fleet: the fleet now, for operators (issue 13). The route's description defines each count. */
export const Fleet = Type.Object(
  {
    as_of: Rfc3339Utc,
    machines: Type.Object(
      {
        /** Every enrolled machine. */
        total: Count,
        /** Machines whose last heartbeat is within the liveness grace (3 heartbeat intervals). */
        online: Count,
        by_state: FleetMachineStates,
      },
      { additionalProperties: false },
    ),
    gpus: Type.Object(
      {
        /** GPUs of every enrolled machine. */
        total: Count,
        /** GPUs of the machines renters' offer search lists now (listed, live, not held, available beyond now). */
        listed: Count,
        /** GPUs held by jobs that occupy their machine's devices (RESERVED, STARTING, RUNNING, STOPPING, RECONCILING). */
        allocated: Count,
      },
      { additionalProperties: false },
    ),
    jobs: Type.Object(
      {
        by_state: FleetJobStates,
        /** Jobs not in a final state (CLOSED, FAILED). */
        active: Count,
      },
      { additionalProperties: false },
    ),
    /** This replica's last reconciliation of the chain with the ledger; absent before its first (or without a chain). */
    treasury: Type.Optional(TreasuryReconciliation),
  },
  { additionalProperties: false },
);
export type Fleet = Static<typeof Fleet>;
