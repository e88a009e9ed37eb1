import {
  Account,
  ApiKeyCreated,
  ApiKeyCreateRequest,
  ApiKeyRevoked,
  ApiKeyView,
  AuditLogEntry,
  DeletionRequest,
  EmailVerificationRequest,
  EmailVerificationResponse,
  IdempotencyHeaders,
  IdParams,
  IntegrationParams,
  IntegrationTokenRequest,
  Page,
  PageQuery,
  SessionCreated,
  SessionCreateRequest,
  SignUpRequest,
  SignUpResponse,
  StepUpRequest,
  StepUpResponse,
  TotpConfirmRequest,
  TotpConfirmResponse,
  TotpEnrollment,
  VerificationResendResponse,
} from '@ark/shared';
import { Type } from '@sinclair/typebox';
import { normalizeEmail } from '../../domain/accounts/account.js';
import { DomainError } from '../../errors.js';
import {
  accountView,
  apiKeyCreatedView,
  apiKeyView,
  auditEntryView,
  deletionRequestView,
  emailVerifiedView,
  sessionCreatedView,
  signUpView,
  stepUpView,
  totpEnrollmentView,
} from '../../views/accounts.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { limitAuthAttempts } from '../rate-limit.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** Fastify sends nothing for an undefined payload; the schema's null only documents "no body". */
const NO_BODY = undefined as unknown as null;

export function registerAccountRoutes(app: TypedApp, ctx: AppContext): void {
  const { clock, config } = ctx;
  const accounts = ctx.services.accounts;

  /** Counts one attempt under every key; any exhausted key answers 429 UNAVAILABLE. */
  const limitAttempts = (keys: string[]) =>
    limitAuthAttempts(ctx.rateLimiter, { keys, perMinute: config.authAttemptsPerMinute, now: clock.now() });

  /** A failed verification mail is logged, not answered: the account exists either way. */
  const logMailFailure = (log: { error(obj: object, msg: string): void }, accountId: string, mail: { error: unknown }) => {
    if (mail.error !== null) log.error({ err: mail.error, accountId }, 'verification mail failed');
  };

  // ---- sign-up, verification, sessions

  app.post(
    '/api/v1/accounts',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Sign up with email and password; a verification link is mailed',
        tags: ['account'],
        security: [],
        body: SignUpRequest,
        response: withErrors({ 201: SignUpResponse }, 409),
      },
    },
    async (request, reply) => {
      const { email, password, name, role } = request.body;
      await limitAttempts([`signup:ip:${request.ip}`, `signup:email:${normalizeEmail(email)}`]);
      const { account, mail } = await accounts.signUp({ email, password, name: name ?? null, role: role ?? 'renter' });
      logMailFailure(request.log, account.id, mail);
      return reply.code(201).send(signUpView(account));
    },
  );

  app.post(
    '/api/v1/account/email-verification',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Verify the email address with the token from the mailed link',
        tags: ['account'],
        security: [],
        body: EmailVerificationRequest,
        response: withErrors({ 200: EmailVerificationResponse }),
      },
    },
    async (request) => {
      await limitAttempts([`verify:ip:${request.ip}`]);
      return emailVerifiedView(await accounts.verifyEmail(request.body.token));
    },
  );

  app.post(
    '/api/v1/account/email-verification/resend',
    {
      config: { auth: {} },
      schema: {
        summary: 'Mail a fresh verification link (no-op once verified)',
        tags: ['account'],
        response: withErrors({ 200: VerificationResendResponse }, 403),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      await limitAttempts([`resend:account:${principal.accountId}`]);
      const mail = await accounts.resendVerification(principal);
      logMailFailure(request.log, principal.accountId, mail);
      return { sent: mail.sent };
    },
  );

  // The mailed link lands here when a person clicks it; API clients use the POST above.
  app.get(
    '/verify-email',
    {
      config: { auth: 'public' },
      schema: { hide: true, querystring: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }) },
    },
    async (request, reply) => {
      await limitAttempts([`verify:ip:${request.ip}`]);
      reply.type('text/plain; charset=utf-8');
      try {
        await accounts.verifyEmail(request.query.token);
        return 'Your email address is verified. You can close this page.\n';
      } catch (error) {
        if (!(error instanceof DomainError) || error.code !== 'VERIFICATION_TOKEN_INVALID') throw error;
        return reply.code(422).send('This verification link is invalid, expired or already used.\n');
      }
    },
  );

  app.post(
    '/api/v1/auth/sessions',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Sign in with email and password; answers a session bearer token',
        tags: ['auth'],
        security: [],
        body: SessionCreateRequest,
        response: withErrors({ 201: SessionCreated }),
      },
    },
    async (request, reply) => {
      const { email, password } = request.body;
      await limitAttempts([`signin:ip:${request.ip}`, `signin:email:${normalizeEmail(email)}`]);
      const session = await accounts.signIn({ email, password });
      return reply.code(201).send(sessionCreatedView(session));
    },
  );

  app.delete(
    '/api/v1/auth/sessions/current',
    {
      config: { auth: { session: true } },
      schema: {
        summary: 'Sign out: revoke the session that made this request',
        tags: ['auth'],
        response: withErrors({ 204: Type.Null() }, 403),
      },
    },
    async (request, reply) => {
      await accounts.signOut(principalOf(request));
      return reply.code(204).send(NO_BODY);
    },
  );

  // ---- self view and step-up

  app.get(
    '/api/v1/account',
    {
      config: { auth: {} },
      schema: { summary: 'Profile and security metadata of the caller', tags: ['account'], response: withErrors({ 200: Account }) },
    },
    // Not async: the row read while authenticating answers it, with no promise to wait for.
    (request) => {
      const principal = principalOf(request);
      const account = accounts.profile(principal);
      return account instanceof Promise
        ? account.then((found) => accountView(found, principal.authMethod))
        : accountView(account, principal.authMethod);
    },
  );

  app.post(
    '/api/v1/account/step-up',
    {
      config: { auth: {} },
      schema: {
        summary:
          'Step up this credential with the password, a TOTP code once two-factor is enabled, or (agent accounts) a signed wallet step-up challenge',
        description:
          'A password or TOTP code steps up an interactive session only; an API key answers 403 FORBIDDEN to them (a key never ' +
          "escalates with what a person types) and is stepped up only by its account's sign-in wallet. A step-up never adds a scope.",
        tags: ['account'],
        body: StepUpRequest,
        response: withErrors({ 200: StepUpResponse }, 403, 409, 503),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      await limitAttempts([`stepup:ip:${request.ip}`, `stepup:account:${principal.accountId}`]);
      return stepUpView(await accounts.stepUp(principal, request.body));
    },
  );

  app.post(
    '/api/v1/account/totp',
    {
      config: { auth: { session: true, stepUp: 'any' } },
      schema: {
        summary: 'Start TOTP enrollment: answers the seed for an authenticator app (confirm with a code to enable)',
        tags: ['account'],
        response: withErrors({ 200: TotpEnrollment }, 403, 409),
      },
    },
    async (request) => {
      return totpEnrollmentView(await accounts.startTotpEnrollment(principalOf(request)));
    },
  );

  app.post(
    '/api/v1/account/totp/confirm',
    {
      config: { auth: { session: true } },
      schema: {
        summary: 'Enable TOTP with a first code from the authenticator app',
        tags: ['account'],
        body: TotpConfirmRequest,
        response: withErrors({ 200: TotpConfirmResponse }, 403, 409),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      await limitAttempts([`stepup:ip:${request.ip}`, `stepup:account:${principal.accountId}`]);
      await accounts.confirmTotp(principal, request.body.totp_code);
      return { two_factor_enabled: true as const };
    },
  );

  // ---- API keys

  app.post(
    '/api/v1/account/api-keys',
    {
      config: { auth: { stepUp: 'any' }, idempotent: true },
      schema: {
        summary: 'Create an API key; the secret is shown exactly once',
        tags: ['account'],
        headers: IdempotencyHeaders,
        body: ApiKeyCreateRequest,
        response: withErrors({ 201: ApiKeyCreated }, 403, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { label, scopes, expires_at } = request.body;
      const created = await accounts.createApiKey(
        {
          accountId: principal.accountId,
          label,
          scopes,
          expiresAt: expires_at === undefined ? null : new Date(expires_at),
          issuer: { kind: 'holder', via: principal.authMethod, scopes: principal.scopes },
        },
        answerInTransaction(request, reply, 201, apiKeyCreatedView),
      );
      return reply.code(201).send(apiKeyCreatedView(created));
    },
  );

  app.get(
    '/api/v1/account/api-keys',
    {
      config: { auth: {} },
      schema: {
        summary: 'List the caller’s API keys that are not revoked (no secrets)',
        tags: ['account'],
        querystring: PageQuery,
        response: withErrors({ 200: Page(ApiKeyView) }),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = `api-keys:${principal.accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const keys = await accounts.listApiKeys(principal.accountId, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, keys, request.query.limit, (key) => [key.createdAt, key.id], apiKeyView);
    },
  );

  app.delete(
    '/api/v1/account/api-keys/:id',
    {
      config: { auth: {} },
      schema: {
        summary: 'Revoke one of the caller’s API keys',
        tags: ['account'],
        params: IdParams,
        response: withErrors({ 200: ApiKeyRevoked }, 404),
      },
    },
    async (request) => {
      await accounts.revokeApiKey(principalOf(request).accountId, request.params.id);
      return { revoked: true as const };
    },
  );

  // ---- integrations and deletion

  app.post(
    '/api/v1/account/integrations/:provider',
    {
      config: { auth: { scope: 'renter', stepUp: 'any' }, idempotent: true },
      schema: {
        summary: 'Store a third-party token (encrypted at rest, never shown again)',
        description: "Renter scope and a step-up: the token is used to pull models for the account's own rentals.",
        tags: ['account'],
        headers: IdempotencyHeaders,
        params: IntegrationParams,
        body: IntegrationTokenRequest,
        response: withErrors({ 201: Type.Null({ description: 'Stored; no body' }) }, 403, 409),
      },
    },
    async (request, reply) => {
      await accounts.storeIntegrationToken(
        { accountId: principalOf(request).accountId, provider: request.params.provider, token: request.body.token },
        answerInTransaction(request, reply, 201, () => undefined),
      );
      return reply.code(201).send(NO_BODY);
    },
  );

  app.post(
    '/api/v1/account/deletion-request',
    {
      config: { auth: { stepUp: 'any' }, idempotent: true },
      schema: {
        summary: 'Ask for the account to be deleted (ledger evidence required by policy is preserved)',
        description:
          "Any scope and a step-up: the step-up is the account holder's own proof (a session's password or TOTP, or an agent's " +
          'sign-in wallet), which no key can make for itself.',
        tags: ['account'],
        headers: IdempotencyHeaders,
        response: withErrors({ 202: DeletionRequest }, 403, 409),
      },
    },
    async (request, reply) => {
      const opened = await accounts.requestDeletion(
        principalOf(request).accountId,
        answerInTransaction(request, reply, 202, deletionRequestView),
      );
      return reply.code(202).send(deletionRequestView(opened));
    },
  );

  // ---- administration

  app.get(
    '/api/v1/admin/audit',
    {
      config: { auth: { admin: true } },
      schema: {
        summary: 'The audit log, newest first (admin session)',
        tags: ['admin'],
        querystring: PageQuery,
        response: withErrors({ 200: Page(AuditLogEntry) }, 403),
      },
    },
    async (request) => {
      const scope = 'admin-audit';
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const entries = await accounts.listAuditLog(after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, entries, request.query.limit, (entry) => [entry.at, entry.id], auditEntryView);
    },
  );
}
