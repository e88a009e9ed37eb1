// The one catalog of error codes. Codes read as sentences; status and retryable are fixed per code,
// so a client can branch on `code` alone.

export interface ErrorSpec {
  readonly status: number;
  readonly retryable: boolean;
  readonly message: string;
  /**
   * Other statuses one use of the code may answer with (always with the same `retryable`). Contract part 7 gives
   * UNAVAILABLE two: 429 for rate limits, 503 for unavailable money or provider state.
   */
  readonly alsoStatus?: readonly number[];
}

/** The status UNAVAILABLE answers when money or provider state is unavailable (contract part 7), not a rate limit. */
export const UNAVAILABLE_STATE_STATUS = 503;

export const ERROR_CATALOG = {
  // Wire-level
  VALIDATION_FAILED: { status: 422, retryable: false, message: 'The request is invalid.' },
  MALFORMED_JSON: { status: 422, retryable: false, message: 'The request body is not valid JSON.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, message: 'The request body must be application/json.' },
  BODY_TOO_LARGE: { status: 413, retryable: false, message: 'The request body is too large.' },
  NOT_FOUND: { status: 404, retryable: false, message: 'Not found.' },
  METHOD_NOT_ALLOWED: { status: 405, retryable: false, message: 'Method not allowed.' },
  // Refused by the HTTP layer before any route sees the request: framing, request line, header size, slowness.
  MALFORMED_REQUEST: { status: 400, retryable: false, message: 'The HTTP request is malformed.' },
  HEADERS_TOO_LARGE: { status: 431, retryable: false, message: 'The request URL or headers are too large.' },
  REQUEST_TIMEOUT: { status: 408, retryable: true, message: 'The request did not arrive in time.' },
  UNAUTHENTICATED: { status: 401, retryable: false, message: 'Authentication is required.' },
  FORBIDDEN: { status: 403, retryable: false, message: 'You are not allowed to do this.' },
  UNAVAILABLE: { status: 429, retryable: true, message: 'Too many requests; slow down and retry.', alsoStatus: [503] },
  INTERNAL: { status: 500, retryable: true, message: 'Internal error.' },
  SERVICE_UNAVAILABLE: { status: 503, retryable: true, message: 'The service is temporarily unavailable.' },
  // Idempotency
  IDEMPOTENCY_KEY_REQUIRED: { status: 422, retryable: false, message: 'The Idempotency-Key header is required and must be a UUID.' },
  IDEMPOTENCY_CONFLICT: { status: 409, retryable: false, message: 'This Idempotency-Key was used with a different request.' },
  IDEMPOTENCY_IN_PROGRESS: { status: 409, retryable: true, message: 'A request with this Idempotency-Key is still being processed.' },
  INVALID_CURSOR: { status: 422, retryable: false, message: 'The cursor is invalid.' },
  // Accounts and auth
  EMAIL_TAKEN: { status: 409, retryable: false, message: 'An account with this email already exists.' },
  INVALID_CREDENTIALS: { status: 401, retryable: false, message: 'The email or password is wrong.' },
  VERIFICATION_TOKEN_INVALID: { status: 422, retryable: false, message: 'The verification token is invalid or expired.' },
  EMAIL_NOT_VERIFIED: { status: 403, retryable: false, message: 'Verify your email address first.' },
  STEP_UP_REQUIRED: { status: 403, retryable: false, message: 'A fresh step-up proof is required.' },
  STEP_UP_FAILED: { status: 401, retryable: false, message: 'The step-up proof is wrong.' },
  TOTP_NOT_ENROLLED: { status: 409, retryable: false, message: 'Two-factor authentication is not enrolled.' },
  TOTP_ALREADY_ENABLED: { status: 409, retryable: false, message: 'Two-factor authentication is already enabled.' },
  SCOPE_REQUIRED: { status: 403, retryable: false, message: 'The API key lacks the scope this operation needs.' },
  ADMIN_SESSION_REQUIRED: { status: 403, retryable: false, message: 'An interactive admin session is required.' },
  STEP_UP_TOTP_REQUIRED: { status: 403, retryable: false, message: 'Two-factor authentication is enabled: step up with a TOTP code.' },
  TOTP_CODE_INVALID: { status: 422, retryable: false, message: 'The TOTP code is wrong or was already used.' },
  // Sign-in with GitHub and Google (issue 13)
  OAUTH_PROVIDER_NOT_CONFIGURED: { status: 404, retryable: false, message: 'Sign-in with this provider is not configured on this server.' },
  OAUTH_STATE_INVALID: {
    status: 400,
    retryable: false,
    message: 'This sign-in does not match one started in this browser, or it expired or was already used: start again.',
  },
  OAUTH_PROVIDER_REFUSED: { status: 401, retryable: false, message: 'The provider refused the sign-in.' },
  OAUTH_PROVIDER_UNAVAILABLE: { status: 503, retryable: true, message: 'The sign-in provider cannot be reached right now; retry later.' },
  OAUTH_EMAIL_UNVERIFIED: {
    status: 403,
    retryable: false,
    message: 'The provider does not report a verified email address for this account: verify it there first.',
  },
  OAUTH_ACCOUNT_UNVERIFIED: {
    status: 409,
    retryable: false,
    message: 'An account with this email exists and its email is not verified: sign in with its password and verify it first.',
  },
  OAUTH_IDENTITY_NOT_LINKED: { status: 403, retryable: false, message: 'This provider account is not linked to your account.' },
  SSH_KEY_EXISTS: { status: 409, retryable: false, message: 'This SSH key is already saved on this account.' },
  WITHDRAWAL_ADDRESS_EXISTS: { status: 409, retryable: false, message: 'This withdrawal address is already registered on this network.' },
  // Money out: withdrawals and payouts (issue 12)
  WITHDRAWAL_NETWORK_UNSUPPORTED: { status: 422, retryable: false, message: 'Withdrawals are paid on the primary network only.' },
  WITHDRAWAL_BELOW_MINIMUM: { status: 422, retryable: false, message: 'The amount is below the smallest withdrawal.' },
  WITHDRAWAL_NOT_UNSIGNED: {
    status: 409,
    retryable: false,
    message: 'The withdrawal is no longer unsigned (a nonce is pinned, or it is final): it cannot be reviewed.',
  },
  // Held deposits, resolved by an operator (issue 22)
  DEPOSIT_NOT_HELD: {
    status: 409,
    retryable: false,
    message: 'The deposit is not HELD (it is still unfinal, already credited, or refunding): an operator cannot credit or refund it.',
  },
  DEPOSIT_NOT_REFUNDABLE: {
    status: 409,
    retryable: false,
    message:
      'The deposit cannot be refunded through the payout path (not USDC on the primary network, or its sender is unknown): credit it instead.',
  },
  // Wallet proofs (EIP-4361): agent registration and wallet step-up. Every refusal needs a fresh challenge.
  SIWE_MESSAGE_MALFORMED: { status: 422, retryable: false, message: 'The message is not an EIP-4361 sign-in message.' },
  SIWE_DOMAIN_MISMATCH: { status: 401, retryable: false, message: 'The signed message is for another domain.' },
  SIWE_URI_MISMATCH: { status: 401, retryable: false, message: 'The signed message is for another URI.' },
  SIWE_CHAIN_MISMATCH: { status: 401, retryable: false, message: 'The signed message is for another chain; sign for chain 8453.' },
  SIWE_MESSAGE_NOT_ISSUED: {
    status: 401,
    retryable: false,
    message: 'The message is not one this server issued for this operation, or it was changed: sign the challenge exactly as returned.',
  },
  SIWE_CHALLENGE_EXPIRED: { status: 401, retryable: false, message: 'The challenge has expired; ask for a fresh one.' },
  SIWE_CHALLENGE_USED: { status: 401, retryable: false, message: 'The challenge was already used; ask for a fresh one.' },
  SIWE_SIGNATURE_INVALID: { status: 401, retryable: false, message: "The signature is not the wallet's signature of this message." },
  WALLET_NOT_EOA: {
    status: 403,
    retryable: false,
    message: 'Only externally owned accounts can register: this address has contract code on the primary network.',
  },
  WALLET_CHECK_UNAVAILABLE: {
    status: 503,
    retryable: true,
    message: 'The primary network cannot be read right now to check the wallet; retry later.',
  },
  STEP_UP_WALLET_REQUIRED: {
    status: 403,
    retryable: false,
    message: 'This account steps up with its sign-in wallet: sign a step-up challenge (POST /api/v1/account/step-up/challenge).',
  },
  STEP_UP_WALLET_NOT_LINKED: { status: 409, retryable: false, message: 'This account has no sign-in wallet.' },
  // Ledger
  INSUFFICIENT_BALANCE: { status: 409, retryable: false, message: 'The available balance is too low.' },
  AMOUNT_TOO_LARGE: {
    status: 422,
    retryable: false,
    message: 'The amount is more than one transfer may move (1000000000000000 micro, one billion USDC).',
  },
  BALANCE_LIMIT_EXCEEDED: { status: 409, retryable: false, message: 'The transfer would take a balance past its limit.' },
  LEDGER_REFERENCE_CONFLICT: {
    status: 409,
    retryable: false,
    message: 'This external reference was already posted with different fields.',
  },
  // Hosting: pairing, enrollment, machines, offers, telemetry
  PAIRING_CODE_INVALID: { status: 404, retryable: false, message: 'The pairing code is wrong or has expired.' },
  HOSTING_BLOCKED: { status: 403, retryable: false, message: 'Hosting is blocked for this account.' },
  HOSTING_SCOPE_REVOKED: {
    status: 403,
    retryable: false,
    message: 'The credential that approved this pairing no longer has the host scope.',
  },
  NEW_HOST_MACHINE_CAP_REACHED: {
    status: 403,
    retryable: false,
    message: 'A new host may pair only a few machines in its first 24 hours.',
  },
  ENROLLMENT_TOKEN_INVALID: { status: 401, retryable: false, message: 'The enrollment token is unknown or expired.' },
  ENROLLMENT_TOKEN_USED: { status: 409, retryable: false, message: 'The enrollment token was already used.' },
  OFFER_VERSION_MISMATCH: { status: 409, retryable: false, message: 'The offer changed since the expected version; read it again.' },
  TELEMETRY_WINDOW_TOO_LONG: { status: 422, retryable: false, message: 'The telemetry window is longer than the retention (172800 s).' },
  // Templates
  TEMPLATE_NOT_FOUND: { status: 404, retryable: false, message: 'No published template has this id.' },
  TEMPLATE_NAME_TAKEN: { status: 409, retryable: false, message: 'Another template already has this name.' },
  // Quotes and jobs
  OFFER_NOT_FOUND: { status: 404, retryable: false, message: 'No listed offer has this id.' },
  OFFER_NOT_CURRENT: { status: 409, retryable: false, message: 'The offer changed or is no longer listed; read the offers again.' },
  MACHINE_NOT_AVAILABLE: { status: 409, retryable: true, message: 'The machine is not live, not online or busy right now.' },
  OUTSIDE_AVAILABILITY: { status: 409, retryable: false, message: "The requested duration is not inside the offer's availability window." },
  MAINTENANCE_CONFLICT: {
    status: 409,
    retryable: false,
    message: 'A maintenance window of the offer falls inside the requested duration.',
  },
  GPUS_NOT_AVAILABLE: { status: 409, retryable: true, message: 'The machine does not have that many free GPUs.' },
  TEMPLATE_RUNTIME_MISSING: { status: 409, retryable: false, message: "The template has no built runtime for the machine's backend." },
  TEMPLATE_DOES_NOT_FIT: { status: 409, retryable: false, message: "The template needs more VRAM than the machine's GPUs have." },
  QUOTE_NOT_FOUND: { status: 404, retryable: false, message: 'No quote of yours has this id.' },
  QUOTE_EXPIRED: { status: 409, retryable: false, message: 'The quote has expired; ask for a new one.' },
  QUOTE_ALREADY_USED: { status: 409, retryable: false, message: 'The quote was already used for a reservation.' },
  JOB_VERSION_MISMATCH: { status: 409, retryable: false, message: 'The job changed since the expected version; read it again.' },
  BUDGET_VERSION_MISMATCH: {
    status: 409,
    retryable: false,
    message: "The job's budget changed since the expected version; read it again.",
  },
  JOB_NOT_EXTENDABLE: {
    status: 409,
    retryable: false,
    message: 'The budget of a job cannot be extended once it is stopping, has ended or is reconciling.',
  },
  BUDGET_LIMIT_EXCEEDED: {
    status: 409,
    retryable: false,
    message: "A job's funded budget may be at most 1000000000000000 micro (one billion USDC).",
  },
  DURATION_LIMIT_DECREASE: { status: 409, retryable: false, message: 'The new duration limit must not be shorter than the current one.' },
  HOST_CEILING_EXCEEDED: {
    status: 409,
    retryable: false,
    message: "The new duration limit passes the host's availability ceiling snapshotted at reservation.",
  },
  JOB_NOT_STOPPABLE: { status: 409, retryable: false, message: 'The job has failed; there is nothing to stop.' },
  SPEND_RATE_CAP_EXCEEDED: {
    status: 409,
    retryable: false,
    message: "The reservation would take the account's committed hourly rate past its spend-rate cap.",
  },
  JOB_ACCESS_UNAVAILABLE: {
    status: 403,
    retryable: false,
    message: 'Access is only available while the job runs, or for a limited window after it stopped.',
  },
  // The OpenAI-compatible relay
  RELAY_NOT_MODEL_JOB: { status: 403, retryable: false, message: 'Only jobs on model-kind templates have an OpenAI-compatible relay.' },
  RELAY_JOB_NOT_RUNNING: { status: 409, retryable: false, message: 'The relay answers only while the job is RUNNING.' },
  // Provider state unavailable (contract part 7: 503, retryable); too many open streams on a job is UNAVAILABLE 429.
  RELAY_ENGINE_UNREACHABLE: { status: 503, retryable: true, message: "The job's engine could not be reached through its machine." },
  RELAY_ENGINE_TIMEOUT: { status: 503, retryable: true, message: "The job's engine did not answer in time." },
  // Job logs (issue 25 item 2)
  JOB_LOGS_UNAVAILABLE: {
    status: 409,
    retryable: false,
    message: 'Logs are kept while the job runs and through its retrieval window after it stopped.',
  },
  JOB_LOGS_UNREACHABLE: { status: 503, retryable: true, message: "The job's machine could not be reached for its logs." },
  // Support tickets
  TICKET_FORBIDDEN: {
    status: 403,
    retryable: false,
    message: 'Only the opener, the host of the ticket’s rental or an operator may do this to the ticket.',
  },
  TICKET_CLOSED: { status: 409, retryable: false, message: 'The ticket is closed; reopen it to write on it.' },
  TICKET_MESSAGE_LIMIT_REACHED: {
    status: 409,
    retryable: false,
    message: 'The ticket holds the most messages one ticket may; open a new one.',
  },
  TICKET_JOB_NOT_FOUND: { status: 404, retryable: false, message: 'No job of yours (as renter or host) has this id.' },
  // Webhooks
  WEBHOOK_URL_REFUSED: {
    status: 422,
    retryable: false,
    message:
      'The endpoint URL must be https and resolve only to public addresses (not loopback, private, link-local, reserved or documentation ones, nor an IPv6 form that carries one).',
  },
  WEBHOOK_ENDPOINT_LIMIT_REACHED: { status: 409, retryable: false, message: 'The account has the most webhook endpoints one account may.' },
  // Admissions (contract part 4, Administration)
  ADMISSIONS_PAUSED: {
    status: 503,
    retryable: true,
    message: 'Admission of new jobs, offers and money is paused by the operator; retry later.',
  },
  ACCEPTANCE_AUTHORIZATION_INVALID: {
    status: 403,
    retryable: false,
    message: 'The acceptance authorization is not valid for this operation.',
  },
  // Agent channel
  CHANNEL_VERSION_UNSUPPORTED: {
    status: 400,
    retryable: false,
    message: 'This agent channel protocol version is not supported; use ?v=1.',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOG;
