import { OAuthCallbackQuery, OAuthCallbackResult, OAuthProviderParams, OAuthStepUpStarted } from '@ark/shared';
import { Type } from '@sinclair/typebox';
import { principalOf } from '../auth.js';
import { CONSOLE_OAUTH_COOKIE, clearConsoleOAuthCookie, consoleSessionCookie } from '../../console/cookies.js';
import type { AppContext } from '../context.js';
import { limitAuthAttempts } from '../rate-limit.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';
import { oauthCallbackView, oauthStepUpStartedView } from '../../views/accounts.js';

// Sign-in with GitHub and Google (issue 13 item 4): a browser is sent to the provider by the start route and comes
// back to the callback route, which answers the same session a password sign-in does. A session steps up through
// the same callback. The account decisions are in services/accounts/oauth.ts, the provider side in oauth/providers.ts.

/** Binds a started sign-in to the browser that started it (login CSRF): only its hash is stored. */
const BINDING_COOKIE = 'ark_oauth_binding';
/** Fastify sends nothing for an undefined payload; the schema's null only documents "no body". */
const NO_BODY = undefined as unknown as null;

/** A cookie's value from a Cookie header; null when absent. */
function cookieOf(header: string | undefined, cookie: string): string | null {
  for (const part of (header ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === cookie) return value.join('=') || null;
  }
  return null;
}

/** The binding cookie's value from a Cookie header; null when absent. */
function bindingOf(header: string | undefined): string | null {
  return cookieOf(header, BINDING_COOKIE);
}

export function registerOAuthRoutes(app: TypedApp, ctx: AppContext): void {
  const { clock, config } = ctx;
  const accounts = ctx.services.accounts;
  const secureCookie = config.publicBaseUrl.startsWith('https:');
  const limitAttempts = (keys: string[]) =>
    limitAuthAttempts(ctx.rateLimiter, { keys, perMinute: config.authAttemptsPerMinute, now: clock.now() });

  app.get(
    '/api/v1/auth/oauth/:provider/start',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Sign in with GitHub or Google: redirects the browser to the provider (authorization code with PKCE)',
        description:
          'Answers 302 to the provider with a state and an S256 PKCE challenge kept server-side, and sets a short-lived ' +
          'HttpOnly cookie that binds the sign-in to this browser. 404 OAUTH_PROVIDER_NOT_CONFIGURED when the operator has ' +
          'not configured the provider; 503 OAUTH_PROVIDER_UNAVAILABLE when its discovery document cannot be read.',
        tags: ['auth'],
        security: [],
        params: OAuthProviderParams,
        response: withErrors({ 302: Type.Null({ description: 'Location: the provider’s authorization URL' }) }, 404, 503),
      },
    },
    async (request, reply) => {
      await limitAttempts([`oauth:ip:${request.ip}`]);
      const { provider } = request.params;
      const started = await accounts.startProviderSignIn(provider);
      const maxAgeS = Math.ceil((started.expiresAt.getTime() - clock.now().getTime()) / 1000);
      const cookie = [
        `${BINDING_COOKIE}=${started.browserBinding}`,
        `Path=/api/v1/auth/oauth/${provider}/callback`,
        `Max-Age=${maxAgeS}`,
        'HttpOnly',
        // Lax, not Strict: the provider's redirect back is a cross-site top-level navigation that must carry it.
        'SameSite=Lax',
        ...(secureCookie ? ['Secure'] : []),
      ].join('; ');
      return reply.code(302).header('set-cookie', cookie).header('location', started.authorizationUrl.href).send(NO_BODY);
    },
  );

  app.get(
    '/api/v1/auth/oauth/:provider/callback',
    {
      config: { auth: 'public' },
      schema: {
        summary: 'Where the provider sends the browser back: links or creates the account and answers a session',
        description:
          'The state must be one this server issued, unused, unexpired, and started by this browser (its cookie), else ' +
          '400 OAUTH_STATE_INVALID. The code is exchanged with the stored PKCE verifier; a provider that refuses it ' +
          '(a wrong verifier, a denial) gives 401 OAUTH_PROVIDER_REFUSED. A provider email that is not verified gives 403 ' +
          'OAUTH_EMAIL_UNVERIFIED; an existing account with that email that never verified it, 409 OAUTH_ACCOUNT_UNVERIFIED. ' +
          'A verified email links the identity to the account that has it, or creates a human renter account. A step-up ' +
          'started with POST /api/v1/account/step-up/oauth/{provider} ends here too (outcome stepped-up).',
        tags: ['auth'],
        security: [],
        params: OAuthProviderParams,
        querystring: OAuthCallbackQuery,
        response: withErrors(
          {
            200: OAuthCallbackResult,
            303: Type.Null({ description: 'A sign-in started from the web console: the session is set in its cookie, Location: /console' }),
          },
          400,
          403,
          404,
          409,
          503,
        ),
      },
    },
    async (request, reply) => {
      await limitAttempts([`oauth:ip:${request.ip}`]);
      const { provider } = request.params;
      // The URL the provider called, as the provider saw it: its parameters under this server's public origin.
      const callbackUrl = new URL(request.url, config.publicBaseUrl);
      const done = await accounts.finishProviderAuthorization(provider, callbackUrl, bindingOf(request.headers.cookie));
      // The binding cookie has done its work.
      const cookies = [`${BINDING_COOKIE}=; Path=/api/v1/auth/oauth/${provider}/callback; Max-Age=0; HttpOnly; SameSite=Lax`];
      // Started from the web console's sign-in page: the session goes into the console's cookie, not a JSON body.
      if (done.outcome !== 'stepped-up' && cookieOf(request.headers.cookie, CONSOLE_OAUTH_COOKIE) !== null) {
        cookies.push(clearConsoleOAuthCookie(provider), consoleSessionCookie(done.sessionToken, done.expiresAt, secureCookie));
        return reply.code(303).header('set-cookie', cookies).header('location', '/console').send(NO_BODY);
      }
      reply.header('set-cookie', cookies);
      return oauthCallbackView(done, provider);
    },
  );

  app.post(
    '/api/v1/account/step-up/oauth/:provider',
    {
      config: { auth: { session: true } },
      schema: {
        summary: 'Start a step-up of this session by a fresh sign-in with a linked GitHub or Google account',
        description:
          'For accounts without TOTP (an account with TOTP steps up with TOTP only: 403 STEP_UP_TOTP_REQUIRED). Answers the ' +
          'provider URL to open in a browser; signing in there as the linked identity steps this session up when the ' +
          'provider returns to the callback. 403 OAUTH_IDENTITY_NOT_LINKED when no identity of that provider is linked.',
        tags: ['account'],
        params: OAuthProviderParams,
        response: withErrors({ 200: OAuthStepUpStarted }, 403, 503),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      await limitAttempts([`stepup:ip:${request.ip}`, `stepup:account:${principal.accountId}`]);
      const started = await accounts.startProviderStepUp(request.params.provider, principal);
      return oauthStepUpStartedView(started);
    },
  );
}
