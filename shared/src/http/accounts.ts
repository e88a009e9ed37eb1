import { type Static, Type } from '@sinclair/typebox';
import { EvmAddress, Int64String, Nullable, Rfc3339Utc, Uuid } from '../formats.js';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../limits.js';

// Accounts, sessions, step-up, API keys, integrations, deletion requests and withdrawal addresses.

export { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH };

export const AccountEmail = Type.String({ format: 'email', minLength: 3, maxLength: 254 });
export type AccountEmail = Static<typeof AccountEmail>;

export const AccountPassword = Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH });
export type AccountPassword = Static<typeof AccountPassword>;

export const AccountRole = Type.Union([Type.Literal('renter'), Type.Literal('host'), Type.Literal('admin')]);
export type AccountRole = Static<typeof AccountRole>;

/** Roles a sign-up may ask for; admin accounts exist only through the operator CLI. */
export const SignUpRole = Type.Union([Type.Literal('renter'), Type.Literal('host')]);
export type SignUpRole = Static<typeof SignUpRole>;

export const ApiKeyScope = Type.Union([Type.Literal('renter'), Type.Literal('host')]);
export type ApiKeyScope = Static<typeof ApiKeyScope>;

export const TotpCode = Type.String({ pattern: '^[0-9]{6}$' });
export type TotpCode = Static<typeof TotpCode>;

/** Contract part 2, Account (self view). No additional properties. */
export const Account = Type.Object(
  {
    account_id: Type.String(),
    email: Type.String(),
    role: AccountRole,
    host_enabled: Type.Boolean(),
    email_verified: Type.Boolean(),
    two_factor_enabled: Type.Boolean(),
    auth_method: Type.Union([Type.Literal('session'), Type.Literal('api-key')], { description: 'how this request authenticated' }),
    step_up_method: Type.Union([Type.Literal('totp'), Type.Literal('password'), Type.Literal('wallet'), Type.Literal('none')], {
      description: 'the proof the step-up operation asks for',
    }),
    name: Type.Optional(Nullable(Type.String())),
    account_kind: Type.Optional(Type.Union([Type.Literal('human'), Type.Literal('agent')])),
    created_at: Type.Optional(Rfc3339Utc),
  },
  { additionalProperties: false },
);
export type Account = Static<typeof Account>;

export const SignUpRequest = Type.Object(
  {
    email: AccountEmail,
    password: AccountPassword,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    role: Type.Optional(SignUpRole),
  },
  { additionalProperties: false },
);
export type SignUpRequest = Static<typeof SignUpRequest>;

/** Sign-up answers this, not the Account view: there is no authenticated request yet to describe. */
export const SignUpResponse = Type.Object(
  { account_id: Uuid, email: Type.String(), email_verified: Type.Boolean() },
  { additionalProperties: false },
);
export type SignUpResponse = Static<typeof SignUpResponse>;

export const EmailVerificationRequest = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
export type EmailVerificationRequest = Static<typeof EmailVerificationRequest>;

export const EmailVerificationResponse = Type.Object(
  { account_id: Uuid, email: Type.String(), email_verified: Type.Literal(true) },
  { additionalProperties: false },
);
export type EmailVerificationResponse = Static<typeof EmailVerificationResponse>;

export const VerificationResendResponse = Type.Object({ sent: Type.Boolean() }, { additionalProperties: false });
export type VerificationResendResponse = Static<typeof VerificationResendResponse>;

export const SessionCreateRequest = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }) },
  { additionalProperties: false },
);
export type SessionCreateRequest = Static<typeof SessionCreateRequest>;

export const SessionCreated = Type.Object({ session_token: Type.String(), expires_at: Rfc3339Utc }, { additionalProperties: false });
export type SessionCreated = Static<typeof SessionCreated>;

/** A sign-in provider (issue 13): GitHub (OAuth 2.0) or Google (OpenID Connect). */
export const OAuthProvider = Type.Union([Type.Literal('github'), Type.Literal('google')]);
export type OAuthProvider = Static<typeof OAuthProvider>;

export const OAuthProviderParams = Type.Object({ provider: OAuthProvider }, { additionalProperties: false });
export type OAuthProviderParams = Static<typeof OAuthProviderParams>;

/** What a provider sends back to the callback; providers add parameters of their own, kept and bounded. */
export const OAuthCallbackQuery = Type.Object(
  {
    state: Type.Optional(Type.String({ maxLength: 512 })),
    code: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
    iss: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: Type.String({ maxLength: 2048 }) },
);
export type OAuthCallbackQuery = Static<typeof OAuthCallbackQuery>;

/**
 * The end of a provider sign-in. A sign-in (created: a new account; linked: an existing account with the same verified
 * email, now linked; signed-in: the identity was linked before) answers the same session a password sign-in does. A
 * step-up (stepped-up) answers when the step-up of the session that started it expires.
 */
export const OAuthCallbackResult = Type.Object(
  {
    outcome: Type.Union([Type.Literal('created'), Type.Literal('linked'), Type.Literal('signed-in'), Type.Literal('stepped-up')]),
    account_id: Type.String(),
    provider: OAuthProvider,
    session_token: Type.Optional(Type.String()),
    expires_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type OAuthCallbackResult = Static<typeof OAuthCallbackResult>;

/** A provider step-up started by a session: open the URL in a browser and sign in there as the linked identity. */
export const OAuthStepUpStarted = Type.Object(
  { authorization_url: Type.String(), expires_at: Rfc3339Utc },
  { additionalProperties: false },
);
export type OAuthStepUpStarted = Static<typeof OAuthStepUpStarted>;

/** An EIP-4361 message as the server issued it: a few hundred characters; the bound leaves room, never megabytes. */
export const SiweMessageText = Type.String({ minLength: 1, maxLength: 4096 });
export type SiweMessageText = Static<typeof SiweMessageText>;

/** An EIP-191 personal_sign signature: 65 bytes (r, s, v) or the 64-byte EIP-2098 compact form, hex. */
export const WalletSignature = Type.String({ pattern: '^0x([0-9a-fA-F]{128}|[0-9a-fA-F]{130})$' });
export type WalletSignature = Static<typeof WalletSignature>;

/** A wallet proof: a step-up challenge the server issued (EIP-4361) and the sign-in wallet's EIP-191 signature of it. */
export const WalletProof = Type.Object({ message: SiweMessageText, signature: WalletSignature }, { additionalProperties: false });
export type WalletProof = Static<typeof WalletProof>;

/** Exactly one proof: a password, a TOTP code, or a wallet signature (accounts created by wallet). */
export const StepUpRequest = Type.Object(
  {
    password: Type.Optional(Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH })),
    totp_code: Type.Optional(TotpCode),
    wallet: Type.Optional(WalletProof),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);
export type StepUpRequest = Static<typeof StepUpRequest>;

export const StepUpResponse = Type.Object(
  { method: Type.Union([Type.Literal('password'), Type.Literal('totp'), Type.Literal('wallet')]), expires_at: Rfc3339Utc },
  { additionalProperties: false },
);
export type StepUpResponse = Static<typeof StepUpResponse>;

export const TotpEnrollment = Type.Object({ otpauth_uri: Type.String(), secret: Type.String() }, { additionalProperties: false });
export type TotpEnrollment = Static<typeof TotpEnrollment>;

export const TotpConfirmRequest = Type.Object({ totp_code: TotpCode }, { additionalProperties: false });
export type TotpConfirmRequest = Static<typeof TotpConfirmRequest>;

export const TotpConfirmResponse = Type.Object({ two_factor_enabled: Type.Literal(true) }, { additionalProperties: false });
export type TotpConfirmResponse = Static<typeof TotpConfirmResponse>;

export const ApiKeyCreateRequest = Type.Object(
  {
    label: Type.String({ minLength: 1, maxLength: 200 }),
    expires_at: Type.Optional(Rfc3339Utc),
    scopes: Type.Array(ApiKeyScope, { minItems: 1, maxItems: 2, uniqueItems: true }),
  },
  { additionalProperties: false },
);
export type ApiKeyCreateRequest = Static<typeof ApiKeyCreateRequest>;

const apiKeyViewProperties = {
  api_key_id: Uuid,
  label: Type.String(),
  scopes: Type.Array(ApiKeyScope),
  /** The first characters of the secret, so a holder can tell keys apart. */
  prefix: Type.String(),
  created_at: Rfc3339Utc,
  expires_at: Nullable(Rfc3339Utc),
  last_used_at: Nullable(Rfc3339Utc),
};

export const ApiKeyView = Type.Object(apiKeyViewProperties, { additionalProperties: false });
export type ApiKeyView = Static<typeof ApiKeyView>;

/** The key view plus the secret, revealed exactly once. */
export const ApiKeyCreated = Type.Object(
  { ...apiKeyViewProperties, secret: Type.String({ pattern: '^ark_[A-Za-z0-9_-]{43}$' }) },
  { additionalProperties: false },
);
export type ApiKeyCreated = Static<typeof ApiKeyCreated>;

export const ApiKeyRevoked = Type.Object({ revoked: Type.Literal(true) }, { additionalProperties: false });
export type ApiKeyRevoked = Static<typeof ApiKeyRevoked>;

export const IntegrationProvider = Type.Union([Type.Literal('model-hub')]);
export type IntegrationProvider = Static<typeof IntegrationProvider>;

export const IntegrationParams = Type.Object({ provider: IntegrationProvider }, { additionalProperties: false });
export type IntegrationParams = Static<typeof IntegrationParams>;

export const IntegrationTokenRequest = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 4096 }) },
  { additionalProperties: false },
);
export type IntegrationTokenRequest = Static<typeof IntegrationTokenRequest>;

export const DeletionRequest = Type.Object(
  { request_id: Uuid, state: Type.Literal('PENDING'), requested_at: Rfc3339Utc },
  { additionalProperties: false },
);
export type DeletionRequest = Static<typeof DeletionRequest>;

export const WithdrawalNetwork = Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,31}$', default: 'base' });
export type WithdrawalNetwork = Static<typeof WithdrawalNetwork>;

export const WithdrawalAddressCreateRequest = Type.Object(
  {
    address: EvmAddress,
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    network: Type.Optional(WithdrawalNetwork),
  },
  { additionalProperties: false },
);
export type WithdrawalAddressCreateRequest = Static<typeof WithdrawalAddressCreateRequest>;

export const WithdrawalAddress = Type.Object(
  {
    id: Uuid,
    address: EvmAddress,
    label: Nullable(Type.String()),
    network: Type.String(),
    /** Bumped when the address is removed, so a transfer pinned to an older version is not paid automatically. */
    version: Int64String,
    created_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type WithdrawalAddress = Static<typeof WithdrawalAddress>;

export const WithdrawalAddressRemoved = Type.Object({ removed: Type.Literal(true) }, { additionalProperties: false });
export type WithdrawalAddressRemoved = Static<typeof WithdrawalAddressRemoved>;

/** A saved SSH public key of the account (the console's rent form offers them; a job still takes its keys in its body). */
export const SSH_KEYS_MAX = 50;
export const SshKeyCreateRequest = Type.Object(
  {
    /** One OpenSSH public key line: `ssh-ed25519 AAAA... comment`. */
    public_key: Type.String({ minLength: 1, maxLength: 16_384 }),
    label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type SshKeyCreateRequest = Static<typeof SshKeyCreateRequest>;

export const SshKey = Type.Object(
  {
    id: Uuid,
    label: Nullable(Type.String()),
    public_key: Type.String(),
    /** OpenSSH's `SHA256:...` fingerprint of the key. */
    fingerprint: Type.String(),
    created_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type SshKey = Static<typeof SshKey>;

export const SshKeyRemoved = Type.Object({ removed: Type.Literal(true) }, { additionalProperties: false });
export type SshKeyRemoved = Static<typeof SshKeyRemoved>;

export const AuditLogEntry = Type.Object(
  {
    id: Type.String(),
    at: Rfc3339Utc,
    actor_account_id: Nullable(Type.String()),
    action: Type.String(),
    subject: Nullable(Type.String()),
    detail: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
);
export type AuditLogEntry = Static<typeof AuditLogEntry>;
