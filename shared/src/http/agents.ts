import { type Static, Type } from '@sinclair/typebox';
import { EvmAddress, Rfc3339Utc } from '../formats.js';
import { Account, ApiKeyCreated, SiweMessageText, WalletSignature } from './accounts.js';

// Agent self-registration by wallet (contract parts 4 and 5, item 6) and the wallet step-up challenge.

export const AgentChallengeRequest = Type.Object({ address: EvmAddress }, { additionalProperties: false });
export type AgentChallengeRequest = Static<typeof AgentChallengeRequest>;

export const AgentChallenge = Type.Object(
  {
    /** Sign exactly this text with personal_sign (EIP-191). */
    message: Type.String(),
    expires_at: Rfc3339Utc,
    terms_version: Type.String(),
    terms_url: Type.String(),
  },
  { additionalProperties: false },
);
export type AgentChallenge = Static<typeof AgentChallenge>;

/** Self-declared metadata: shown, never trusted (it confers no authority). */
export const AgentProfile = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    vendor: Type.String({ minLength: 1, maxLength: 200 }),
    model: Type.String({ minLength: 1, maxLength: 200 }),
  },
  { additionalProperties: false },
);
export type AgentProfile = Static<typeof AgentProfile>;

export const AgentRegistrationRequest = Type.Object(
  { message: SiweMessageText, signature: WalletSignature, agent: AgentProfile },
  { additionalProperties: false },
);
export type AgentRegistrationRequest = Static<typeof AgentRegistrationRequest>;

export const AgentRegistration = Type.Object(
  {
    /** The account as the new key sees it (auth_method api-key). */
    account: Account,
    /** A renter key; its secret is shown exactly once. */
    api_key: ApiKeyCreated,
    /** The account's sign-in wallet, checksummed. */
    wallet_address: EvmAddress,
    agent: AgentProfile,
    /** False when the wallet already had an account: a new key for the same account. */
    account_created: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type AgentRegistration = Static<typeof AgentRegistration>;

export const WalletStepUpChallenge = Type.Object(
  { message: Type.String(), expires_at: Rfc3339Utc, wallet_address: EvmAddress },
  { additionalProperties: false },
);
export type WalletStepUpChallenge = Static<typeof WalletStepUpChallenge>;
