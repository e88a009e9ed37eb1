import type { ErrorCode } from '@ark/shared';

/**
 * The error codes an operation answers beyond those its plumbing implies (the credential and what the route
 * declares it needs, Idempotency-Key, path ids, bodies, cursors, rate limits: derived in openapi-docs.ts). Keyed by
 * `METHOD /path` as in the OpenAPI document. These are the services' own refusals; a code named in the
 * operation's description is picked up from there as well, so this table lists what the descriptions do not say.
 */
export const OPERATION_ERROR_CODES: Readonly<Record<string, readonly ErrorCode[]>> = {
  // Accounts and sign-in
  'POST /api/v1/accounts': ['EMAIL_TAKEN'],
  'POST /api/v1/account/email-verification': ['VERIFICATION_TOKEN_INVALID'],
  'POST /api/v1/auth/sessions': ['INVALID_CREDENTIALS'],
  'POST /api/v1/account/step-up': ['FORBIDDEN', 'STEP_UP_FAILED', 'STEP_UP_TOTP_REQUIRED', 'STEP_UP_WALLET_REQUIRED', 'TOTP_CODE_INVALID'],
  'POST /api/v1/account/step-up/challenge': ['STEP_UP_WALLET_NOT_LINKED', 'WALLET_CHECK_UNAVAILABLE'],
  'POST /api/v1/account/totp': ['TOTP_ALREADY_ENABLED'],
  'POST /api/v1/account/totp/confirm': ['TOTP_NOT_ENROLLED', 'TOTP_ALREADY_ENABLED', 'TOTP_CODE_INVALID'],
  'POST /api/v1/account/api-keys': ['STEP_UP_TOTP_REQUIRED'],
  'POST /api/v1/account/integrations/{provider}': ['STEP_UP_TOTP_REQUIRED'],
  'POST /api/v1/agents/accounts/challenge': ['WALLET_CHECK_UNAVAILABLE'],
  'POST /api/v1/agents/accounts': [
    'SIWE_MESSAGE_MALFORMED',
    'SIWE_DOMAIN_MISMATCH',
    'SIWE_URI_MISMATCH',
    'SIWE_CHAIN_MISMATCH',
    'SIWE_MESSAGE_NOT_ISSUED',
    'SIWE_CHALLENGE_EXPIRED',
    'SIWE_CHALLENGE_USED',
    'SIWE_SIGNATURE_INVALID',
    'WALLET_NOT_EOA',
    'WALLET_CHECK_UNAVAILABLE',
    'FORBIDDEN',
  ],
  // Hosting
  'POST /api/v1/hosts/pairings/lookup': ['PAIRING_CODE_INVALID', 'UNAVAILABLE'],
  'POST /api/v1/hosts/pairings/approve': ['PAIRING_CODE_INVALID', 'HOSTING_BLOCKED', 'NEW_HOST_MACHINE_CAP_REACHED', 'UNAVAILABLE'],
  'POST /api/v1/hosts/pairings/poll': ['NOT_FOUND', 'HOSTING_SCOPE_REVOKED'],
  'POST /api/v1/hosts/enrollment-tokens': ['HOSTING_BLOCKED', 'NEW_HOST_MACHINE_CAP_REACHED'],
  'POST /api/v1/agents/enroll': ['ENROLLMENT_TOKEN_INVALID', 'ENROLLMENT_TOKEN_USED', 'HOSTING_BLOCKED'],
  'POST /api/v1/hosts/machines/{id}/go-live': ['HOSTING_BLOCKED', 'ADMISSIONS_PAUSED'],
  'POST /api/v1/hosts/machines/{id}/offer': [
    'OFFER_VERSION_MISMATCH',
    'HOSTING_BLOCKED',
    'ADMISSIONS_PAUSED',
    'ACCEPTANCE_AUTHORIZATION_INVALID',
  ],
  'GET /api/v1/hosts/machines/{id}/telemetry': ['TELEMETRY_WINDOW_TOO_LONG'],
  // Renting
  'GET /api/v1/templates/{id}': ['TEMPLATE_NOT_FOUND'],
  'POST /api/v1/quotes': [
    'OFFER_NOT_FOUND',
    'OFFER_NOT_CURRENT',
    'TEMPLATE_NOT_FOUND',
    'MACHINE_NOT_AVAILABLE',
    'OUTSIDE_AVAILABILITY',
    'MAINTENANCE_CONFLICT',
    'GPUS_NOT_AVAILABLE',
    'TEMPLATE_RUNTIME_MISSING',
    'TEMPLATE_DOES_NOT_FIT',
    'BUDGET_LIMIT_EXCEEDED',
    'SPEND_RATE_CAP_EXCEEDED',
  ],
  'POST /api/v1/jobs': [
    'QUOTE_NOT_FOUND',
    'QUOTE_EXPIRED',
    'QUOTE_ALREADY_USED',
    'MACHINE_NOT_AVAILABLE',
    'GPUS_NOT_AVAILABLE',
    'INSUFFICIENT_BALANCE',
    'SPEND_RATE_CAP_EXCEEDED',
    'ADMISSIONS_PAUSED',
    'ACCEPTANCE_AUTHORIZATION_INVALID',
  ],
  'GET /api/v1/jobs/{id}/access': ['JOB_ACCESS_UNAVAILABLE'],
  'POST /api/v1/jobs/{id}/stop': ['JOB_NOT_STOPPABLE'],
  'POST /api/v1/jobs/{id}/budget-extension': [
    'JOB_VERSION_MISMATCH',
    'BUDGET_VERSION_MISMATCH',
    'JOB_NOT_EXTENDABLE',
    'BUDGET_LIMIT_EXCEEDED',
    'DURATION_LIMIT_DECREASE',
    'HOST_CEILING_EXCEEDED',
    'INSUFFICIENT_BALANCE',
  ],
  'PUT /api/v1/account/spend-cap': ['STEP_UP_REQUIRED'],
  'POST /api/v1/jobs/{id}/openai/v1/chat/completions': [
    'RELAY_NOT_MODEL_JOB',
    'RELAY_JOB_NOT_RUNNING',
    'RELAY_ENGINE_UNREACHABLE',
    'RELAY_ENGINE_TIMEOUT',
  ],
  'POST /api/v1/jobs/{id}/openai/v1/completions': [
    'RELAY_NOT_MODEL_JOB',
    'RELAY_JOB_NOT_RUNNING',
    'RELAY_ENGINE_UNREACHABLE',
    'RELAY_ENGINE_TIMEOUT',
  ],
  'GET /api/v1/jobs/{id}/openai/v1/models': [
    'RELAY_NOT_MODEL_JOB',
    'RELAY_JOB_NOT_RUNNING',
    'RELAY_ENGINE_UNREACHABLE',
    'RELAY_ENGINE_TIMEOUT',
  ],
  // Money
  'GET /api/v1/billing/deposit-address': ['UNAVAILABLE'],
  'POST /api/v1/billing/x402/top-up': ['NOT_FOUND', 'AMOUNT_TOO_LARGE', 'BALANCE_LIMIT_EXCEEDED', 'ADMISSIONS_PAUSED', 'UNAVAILABLE'],
  'POST /api/v1/withdrawal-addresses': ['WITHDRAWAL_ADDRESS_EXISTS', 'STEP_UP_TOTP_REQUIRED'],
  'POST /api/v1/withdrawals': [
    'WITHDRAWAL_NETWORK_UNSUPPORTED',
    'WITHDRAWAL_BELOW_MINIMUM',
    'AMOUNT_TOO_LARGE',
    'INSUFFICIENT_BALANCE',
    'ADMISSIONS_PAUSED',
    'STEP_UP_TOTP_REQUIRED',
  ],
  'POST /api/v1/admin/withdrawals/{id}/review': ['WITHDRAWAL_NOT_UNSIGNED'],
  'POST /api/v1/admin/deposits/{id}/credit': ['DEPOSIT_NOT_HELD', 'AMOUNT_TOO_LARGE', 'BALANCE_LIMIT_EXCEEDED', 'ADMISSIONS_PAUSED'],
  'POST /api/v1/admin/deposits/{id}/refund': ['DEPOSIT_NOT_HELD', 'DEPOSIT_NOT_REFUNDABLE', 'AMOUNT_TOO_LARGE', 'UNAVAILABLE'],
  // Support and webhooks
  'POST /api/v1/tickets': ['TICKET_JOB_NOT_FOUND'],
  'POST /api/v1/tickets/{id}/messages': ['TICKET_FORBIDDEN', 'TICKET_CLOSED', 'TICKET_MESSAGE_LIMIT_REACHED'],
  'POST /api/v1/tickets/{id}/close': ['TICKET_FORBIDDEN'],
  'POST /api/v1/tickets/{id}/reopen': ['TICKET_FORBIDDEN'],
  'POST /api/v1/webhooks': ['WEBHOOK_URL_REFUSED', 'WEBHOOK_ENDPOINT_LIMIT_REACHED'],
  // Administration
  'POST /api/v1/admin/templates/{id}/qualifications': ['TEMPLATE_NOT_FOUND'],
  'POST /api/v1/admin/acceptance-authorizations': ['STEP_UP_TOTP_REQUIRED'],
  'POST /api/v1/admin/admissions': ['STEP_UP_TOTP_REQUIRED'],
};
