import { type Static, Type } from '@sinclair/typebox';
import { MachineManifest } from '../channel/manifest.js';
import { Nullable, Rfc3339Utc, Uuid } from '../formats.js';

// Host side, pairing and enrollment tokens (contract parts 2 and 8): how a rig gets its machine identity.

// ---- pairing ----

/** Lifetimes and limits of pairing and enrollment (contract part 8). */
export const PAIRING_USER_CODE_MAX_LENGTH = 32;
export const PAIRING_POLL_SECRET_MAX_LENGTH = 200;

/** What the agent sends when it starts a pairing: its manifest, so the approver sees what they approve. */
export const PairingCreateRequest = Type.Object({ manifest: Type.Optional(MachineManifest) }, { additionalProperties: false });
export type PairingCreateRequest = Static<typeof PairingCreateRequest>;

export const PairingCreated = Type.Object(
  {
    pairing_id: Uuid,
    /** Shown once; only its hash is stored. The installer proves itself with it when polling. */
    poll_secret: Type.String(),
    /** Eight characters shown as XXXX-XXXX; lookups ignore case and dashes. */
    user_code: Type.String(),
    verification_uri: Type.String(),
    expires_at: Rfc3339Utc,
    /** Seconds the installer waits between polls. */
    interval_s: Type.Integer({ minimum: 1 }),
  },
  { additionalProperties: false },
);
export type PairingCreated = Static<typeof PairingCreated>;

/** The machine a code belongs to, as its agent described it (self-reported; evidence, not authority). */
export const PairingSummary = Type.Object(
  {
    hostname: Nullable(Type.String()),
    gpu_count: Type.Integer({ minimum: 0 }),
    gpu_models: Type.Array(Type.String()),
    agent_version: Nullable(Type.String()),
    requested_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type PairingSummary = Static<typeof PairingSummary>;

export const UserCodeRequest = Type.Object(
  { user_code: Type.String({ maxLength: PAIRING_USER_CODE_MAX_LENGTH }) },
  { additionalProperties: false },
);
export type UserCodeRequest = Static<typeof UserCodeRequest>;

export const PairingLookupResponse = Type.Object({ summary: PairingSummary, expires_at: Rfc3339Utc }, { additionalProperties: false });
export type PairingLookupResponse = Static<typeof PairingLookupResponse>;

export const PairingApproveRequest = Type.Object(
  { user_code: Type.String({ maxLength: PAIRING_USER_CODE_MAX_LENGTH }), go_live: Type.Optional(Type.Boolean({ default: true })) },
  { additionalProperties: false },
);
export type PairingApproveRequest = Static<typeof PairingApproveRequest>;

export const PairingApproveResponse = Type.Object(
  { approved: Type.Literal(true), go_live: Type.Boolean(), summary: PairingSummary },
  { additionalProperties: false },
);
export type PairingApproveResponse = Static<typeof PairingApproveResponse>;

export const PairingPollRequest = Type.Object(
  { pairing_id: Uuid, poll_secret: Type.String({ minLength: 1, maxLength: PAIRING_POLL_SECRET_MAX_LENGTH }) },
  { additionalProperties: false },
);
export type PairingPollRequest = Static<typeof PairingPollRequest>;

export const PairingState = Type.Union([
  Type.Literal('pending'),
  Type.Literal('expired'),
  Type.Literal('approved'),
  Type.Literal('consumed'),
]);
export type PairingState = Static<typeof PairingState>;

/** Go-live state of a machine (contract part 3, "machine go-live values"). */
export const MachineLiveState = Type.Union([Type.Literal('waiting'), Type.Literal('live'), Type.Literal('failed'), Type.Literal('off')]);
export type MachineLiveState = Static<typeof MachineLiveState>;

export const PairingMachine = Type.Object(
  { machine_id: Uuid, live: MachineLiveState, error: Nullable(Type.String()) },
  { additionalProperties: false },
);
export type PairingMachine = Static<typeof PairingMachine>;

/** Contract part 2, Pairing status (poll result). */
export const PairingStatus = Type.Object(
  {
    status: PairingState,
    /** Only with status approved: single use, valid 10 minutes. */
    enrollment_token: Type.Optional(Type.String()),
    /** The code's expiry while pending or expired; the enrollment token's expiry once approved or consumed. */
    expires_at: Rfc3339Utc,
    go_live: Type.Boolean(),
    /** Null until the agent has enrolled with the token. */
    machine: Nullable(PairingMachine),
  },
  { additionalProperties: false },
);
export type PairingStatus = Static<typeof PairingStatus>;

export const EnrollmentTokenQuery = Type.Object(
  { go_live: Type.Optional(Type.Boolean({ default: true, description: 'list the seeded offer on the first healthy heartbeat' })) },
  { additionalProperties: false },
);
export type EnrollmentTokenQuery = Static<typeof EnrollmentTokenQuery>;

export const EnrollmentTokenCreated = Type.Object(
  { enrollment_token: Type.String(), expires_at: Rfc3339Utc },
  { additionalProperties: false },
);
export type EnrollmentTokenCreated = Static<typeof EnrollmentTokenCreated>;
