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
import type { AppContext } from '../../app.js';
import { accountView, decideStepUp, decodeScopes, normalizeEmail } from '../../domain/accounts/account.js';
import { burnPasswordCheck, hashPassword, verifyPassword } from '../../domain/accounts/password.js';
import { integrationContext, SecretBox, totpContext } from '../../domain/accounts/secret-box.js';
import { hashToken, newVerificationToken } from '../../domain/accounts/tokens.js';
import { newTotpSecret, totpUri, verifyTotp } from '../../domain/accounts/totp.js';
import { verificationMail } from '../../domain/accounts/verification-mail.js';
import { DomainError } from '../../errors.js';
import {
  type AccountRow,
  type ApiKeyRow,
  accountFacts,
  accountOfPrincipal,
  consumeEmailVerification,
  enableTotp,
  findAccountByEmail,
  findAccountById,
  insertAccount,
  insertEmailVerification,
  issueApiKey,
  issueSession,
  listApiKeys,
  listAudit,
  markEmailVerified,
  openDeletionRequest,
  recordStepUp,
  revokeApiKey,
  revokeSession,
  setPendingTotp,
  upsertIntegration,
  useTotpStep,
} from '../../store/accounts.js';
import { appendAudit } from '../../store/audit.js';
import type { Executor } from '../../store/db.js';
import { fetchSize } from '../pagination.js';
import type { Principal } from '../principal.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

const MINUTE_MS = 60_000;
/** Fastify sends nothing for an undefined payload; the schema's null only documents "no body". */
const NO_BODY = undefined as unknown as null;

export function apiKeyView(row: ApiKeyRow): ApiKeyView {
  return {
    api_key_id: row.id,
    label: row.label,
    scopes: decodeScopes(row.scopes),
    prefix: row.prefix,
    created_at: row.created_at,
    expires_at: row.expires_at,
    last_used_at: row.last_used_at,
  };
}

function principalOf(request: { principal: Principal | null }): Principal {
  if (!request.principal) throw new DomainError('UNAUTHENTICATED');
  return request.principal;
}

async function loadAccount(db: Executor, principal: Principal): Promise<AccountRow> {
  const account = accountOfPrincipal(principal) ?? (await findAccountById(db, principal.accountId));
  if (!account) throw new DomainError('UNAUTHENTICATED');
  return account;
}

export function registerAccountRoutes(app: TypedApp, ctx: AppContext): void {
  const { store, clock, config } = ctx;
  const box = new SecretBox(config.secretKey);

  /** Counts one attempt under every key; any exhausted key answers 429 UNAVAILABLE. */
  async function limitAttempts(keys: string[]): Promise<void> {
    const now = clock.now();
    let allowed = true;
    for (const key of keys) {
      if (!(await ctx.rateLimiter.consume(`auth:${key}`, config.authAttemptsPerMinute, MINUTE_MS, now))) allowed = false;
    }
    if (!allowed) throw new DomainError('UNAVAILABLE', 'Too many attempts; wait a minute and retry.');
  }

  async function mailVerificationLink(account: AccountRow, log: { error(obj: object, msg: string): void }): Promise<boolean> {
    const token = newVerificationToken();
    const now = clock.now();
    await insertEmailVerification(store.db, {
      accountId: account.id,
      tokenHash: hashToken(token),
      now,
      ttlMs: config.emailVerificationTtlMs,
    });
    try {
      await ctx.mailer.send(verificationMail(account.email, config.publicBaseUrl, token, config.emailVerificationTtlMs));
      return true;
    } catch (error) {
      // The account exists either way; the holder can ask for another link once signed in.
      log.error({ err: error, accountId: account.id }, 'verification mail failed');
      return false;
    }
  }

  async function verifyEmailToken(token: string): Promise<AccountRow> {
    const now = clock.now();
    const account = await store.db.transaction().execute(async (trx) => {
      const accountId = await consumeEmailVerification(trx, hashToken(token), now);
      if (!accountId) return null;
      await markEmailVerified(trx, accountId, now);
      await appendAudit(trx, { at: now, actorAccountId: accountId, action: 'account.email_verified', subject: accountId });
      return findAccountById(trx, accountId);
    });
    if (!account) throw new DomainError('VERIFICATION_TOKEN_INVALID');
    return account;
  }

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
      const email = normalizeEmail(request.body.email);
      await limitAttempts([`signup:ip:${request.ip}`, `signup:email:${email}`]);
      const passwordHash = await hashPassword(request.body.password);
      const now = clock.now();
      const role = request.body.role ?? 'renter';
      const account = await store.db.transaction().execute(async (trx) => {
        const row = await insertAccount(trx, { email, passwordHash, name: request.body.name ?? null, role, emailVerified: false, now });
        await appendAudit(trx, { at: now, actorAccountId: row.id, action: 'account.signed_up', subject: row.id, detail: { role } });
        return row;
      });
      await mailVerificationLink(account, request.log);
      return reply.code(201).send({ account_id: account.id, email: account.email, email_verified: false });
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
      const account = await verifyEmailToken(request.body.token);
      return { account_id: account.id, email: account.email, email_verified: true as const };
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
      const account = await loadAccount(store.db, principal);
      if (account.email_verified_at !== null) return { sent: false };
      return { sent: await mailVerificationLink(account, request.log) };
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
        await verifyEmailToken(request.query.token);
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
      const email = normalizeEmail(request.body.email);
      await limitAttempts([`signin:ip:${request.ip}`, `signin:email:${email}`]);
      const account = await findAccountByEmail(store.db, email);
      // Unknown email and wrong password cost the same and answer the same, so sign-in does not enumerate accounts.
      const ok = account?.password_hash
        ? await verifyPassword(request.body.password, account.password_hash)
        : await burnPasswordCheck(request.body.password);
      if (!account || !ok) throw new DomainError('INVALID_CREDENTIALS');
      const { token, row } = await issueSession(store.db, account.id, clock.now(), config.sessionTtlMs);
      return reply.code(201).send({ session_token: token, expires_at: row.expires_at });
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
      await revokeSession(store.db, principalOf(request).credentialId, clock.now());
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
    async (request) => {
      const principal = principalOf(request);
      // The row read while authenticating answers it: no second query, and no await when it is there.
      return accountView(accountFacts(accountOfPrincipal(principal) ?? (await loadAccount(store.db, principal))), principal.authMethod);
    },
  );

  app.post(
    '/api/v1/account/step-up',
    {
      config: { auth: {} },
      schema: {
        summary: 'Step up this credential with the password, or a TOTP code once two-factor is enabled',
        tags: ['account'],
        body: StepUpRequest,
        response: withErrors({ 200: StepUpResponse }, 403, 409),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      await limitAttempts([`stepup:ip:${request.ip}`, `stepup:account:${principal.accountId}`]);
      const now = clock.now();
      const account = await findAccountById(store.db, principal.accountId);
      if (!account) throw new DomainError('UNAUTHENTICATED');
      const decision = decideStepUp(accountFacts(account), request.body);
      if ('refused' in decision) throw new DomainError(decision.refused);
      if (decision.method === 'password') {
        if (!(account.password_hash && (await verifyPassword(decision.password, account.password_hash))))
          throw new DomainError('STEP_UP_FAILED');
      } else {
        const secret = box.open(account.totp_secret_sealed ?? '', totpContext(account.id));
        const step = verifyTotp(secret, decision.code, now, account.totp_last_step);
        if (step === null || !(await useTotpStep(store.db, account.id, account.totp_last_step, step)))
          throw new DomainError('STEP_UP_FAILED');
      }
      const until = new Date(now.getTime() + config.stepUpTtlMs);
      await recordStepUp(store.db, { kind: principal.authMethod, id: principal.credentialId }, decision.method, until);
      return { method: decision.method, expires_at: until.toISOString() };
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
      const principal = principalOf(request);
      const account = await loadAccount(store.db, principal);
      if (account.totp_secret_sealed !== null) throw new DomainError('TOTP_ALREADY_ENABLED');
      const secret = newTotpSecret();
      await setPendingTotp(store.db, account.id, box.seal(secret, totpContext(account.id)), clock.now());
      return { otpauth_uri: totpUri(secret, account.email), secret };
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
      const now = clock.now();
      const account = await findAccountById(store.db, principal.accountId);
      if (!account) throw new DomainError('UNAUTHENTICATED');
      if (account.totp_secret_sealed !== null) throw new DomainError('TOTP_ALREADY_ENABLED');
      const pending = account.totp_pending_sealed;
      if (pending === null) throw new DomainError('TOTP_NOT_ENROLLED', 'Start enrollment with POST /api/v1/account/totp first.');
      const step = verifyTotp(box.open(pending, totpContext(account.id)), request.body.totp_code, now, null);
      if (step === null) throw new DomainError('TOTP_CODE_INVALID');
      await store.db.transaction().execute(async (trx) => {
        if (!(await enableTotp(trx, account.id, pending, step, now)))
          throw new DomainError('TOTP_NOT_ENROLLED', 'The enrollment changed meanwhile; start again.');
        await appendAudit(trx, { at: now, actorAccountId: account.id, action: 'account.totp_enabled', subject: account.id });
      });
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
      const now = clock.now();
      const { label, scopes, expires_at } = request.body;
      if (expires_at !== undefined && new Date(expires_at).getTime() <= now.getTime()) {
        throw new DomainError('VALIDATION_FAILED', 'body/expires_at must be in the future');
      }
      const expiresAt = expires_at === undefined ? null : new Date(expires_at).toISOString();
      const created = await store.db.transaction().execute(async (trx) => {
        const issued = await issueApiKey(trx, { accountId: principal.accountId, label, scopes, expiresAt, now });
        await appendAudit(trx, {
          at: now,
          actorAccountId: principal.accountId,
          action: 'api_key.created',
          subject: issued.row.id,
          detail: { scopes: decodeScopes(issued.row.scopes), label, via: principal.authMethod },
        });
        return issued;
      });
      return reply.code(201).send({ ...apiKeyView(created.row), secret: created.secret });
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
      const rows = await listApiKeys(store.db, principal.accountId, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, rows, request.query.limit, (row) => [row.created_at, row.id], apiKeyView);
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
      const principal = principalOf(request);
      const now = clock.now();
      const found = await store.db.transaction().execute(async (trx) => {
        if (!(await revokeApiKey(trx, principal.accountId, request.params.id, now))) return false;
        await appendAudit(trx, { at: now, actorAccountId: principal.accountId, action: 'api_key.revoked', subject: request.params.id });
        return true;
      });
      if (!found) throw new DomainError('NOT_FOUND', 'No such API key.');
      return { revoked: true as const };
    },
  );

  // ---- integrations and deletion

  app.post(
    '/api/v1/account/integrations/:provider',
    {
      config: { auth: { stepUp: 'any' }, idempotent: true },
      schema: {
        summary: 'Store a third-party token (encrypted at rest, never shown again)',
        tags: ['account'],
        headers: IdempotencyHeaders,
        params: IntegrationParams,
        body: IntegrationTokenRequest,
        response: withErrors({ 201: Type.Null({ description: 'Stored; no body' }) }, 403, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { provider } = request.params;
      const now = clock.now();
      const sealed = box.seal(request.body.token, integrationContext(principal.accountId, provider));
      await store.db.transaction().execute(async (trx) => {
        await upsertIntegration(trx, principal.accountId, provider, sealed, now);
        await appendAudit(trx, { at: now, actorAccountId: principal.accountId, action: 'integration.token_stored', subject: provider });
      });
      return reply.code(201).send(NO_BODY);
    },
  );

  app.post(
    '/api/v1/account/deletion-request',
    {
      config: { auth: { stepUp: 'any' }, idempotent: true },
      schema: {
        summary: 'Ask for the account to be deleted (ledger evidence required by policy is preserved)',
        tags: ['account'],
        headers: IdempotencyHeaders,
        response: withErrors({ 202: DeletionRequest }, 403, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const now = clock.now();
      const row = await store.db.transaction().execute(async (trx) => {
        const { row: opened, created } = await openDeletionRequest(trx, principal.accountId, now);
        if (created)
          await appendAudit(trx, {
            at: now,
            actorAccountId: principal.accountId,
            action: 'account.deletion_requested',
            subject: opened.id,
          });
        return opened;
      });
      return reply.code(202).send({ request_id: row.id, state: 'PENDING' as const, requested_at: row.requested_at });
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
      const rows = await listAudit(store.db, after, fetchSize(request.query.limit));
      return ctx.paginator.page(
        scope,
        rows,
        request.query.limit,
        (row) => [row.at, row.id],
        (row) => ({
          id: row.id,
          at: row.at,
          actor_account_id: row.actor_account_id,
          action: row.action,
          subject: row.subject,
          detail: JSON.parse(row.detail) as Record<string, unknown>,
        }),
      );
    },
  );
}
