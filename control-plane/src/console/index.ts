import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import view from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../errors.js';
import type { AppContext } from '../http/context.js';
import { registerAdminPages } from './admin.js';
import { registerHostPages } from './host.js';
import { registerMoneyOutActions } from './money-out.js';
import { registerKeyPages } from './keys.js';
import { registerRentPages } from './rent.js';
import { registerRenterPages } from './renter.js';
import { registerSupportPages } from './support.js';
import { type ConsoleScope, CONSOLE_POLICY, SESSION_COOKIE } from './session.js';
import { registerSessionPages } from './sign-in.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const require = createRequire(import.meta.url);

/** What the console serves besides pages, from this origin (the policy allows nothing else). */
function assets(): Map<string, { type: string; body: Buffer }> {
  const css = 'text/css; charset=utf-8';
  const js = 'text/javascript; charset=utf-8';
  return new Map([
    ['console.css', { type: css, body: readFileSync(here('./assets/console.css')) }],
    ['console.js', { type: js, body: readFileSync(here('./assets/console.js')) }],
    ['favicon.svg', { type: 'image/svg+xml', body: readFileSync(here('./assets/favicon.svg')) }],
    ['htmx.min.js', { type: js, body: readFileSync(require.resolve('htmx.org/dist/htmx.min.js')) }],
    ['uPlot.iife.min.js', { type: js, body: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js')) }],
    ['uPlot.min.css', { type: css, body: readFileSync(require.resolve('uplot/dist/uPlot.min.css')) }],
  ]);
}

/**
 * The web console at /console (issue 13 item 2): server-rendered pages over the public API for hosts, renters and
 * operators. Sessions are the API's own (the cookie carries the session token), forms are CSRF-protected, and the
 * pages load scripts and styles from this origin only.
 */
export async function registerConsole(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const secure = ctx.config.publicBaseUrl.startsWith('https:');
  await app.register(
    async (scope) => {
      await scope.register(cookie);
      // Forms are small: a person types them.
      await scope.register(formbody, { bodyLimit: 64 * 1024 });
      await scope.register(csrf, {
        sessionPlugin: '@fastify/cookie',
        cookieKey: 'ark_csrf',
        cookieOpts: { path: '/console', httpOnly: true, sameSite: 'strict', secure },
        getToken: (request: FastifyRequest) => (request.body as Record<string, string> | undefined)?._csrf,
      });
      await scope.register(view, {
        engine: { eta: new Eta({ views: here('./views'), cache: true, autoEscape: true, autoTrim: false }) },
        root: here('./views'),
      });
      // Every form post proves it came from a console page (the token of the secret in the CSRF cookie).
      scope.addHook('preHandler', (request, reply, done) => {
        if (request.method === 'POST') scope.csrfProtection(request, reply, done);
        else done();
      });
      scope.setErrorHandler((error: FastifyError, request, reply) => errorPage(error, request, reply));

      const files = assets();
      scope.get<{ Params: { name: string } }>(
        '/assets/:name',
        { config: { auth: 'public', cache: 'public' }, schema: { hide: true } },
        async (request, reply) => {
          const file = files.get(request.params.name);
          if (!file) return reply.code(404).type('text/plain; charset=utf-8').send('Not found.');
          return reply.type(file.type).header('cache-control', 'public, max-age=3600').send(file.body);
        },
      );
      const console: ConsoleScope = { scope, ctx, secure };
      registerSessionPages(console);
      registerHostPages(console);
      registerRenterPages(console);
      registerRentPages(console);
      registerKeyPages(console);
      registerAdminPages(console);
      registerMoneyOutActions(console);
      registerSupportPages(console);
    },
    { prefix: '/console' },
  );
}

/** Any failure inside the console is a page, never a JSON envelope in the browser. */
function errorPage(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const csrfRefused = typeof error.code === 'string' && error.code.startsWith('FST_CSRF_');
  // The API's plumbing (a JSON body refused by http/json-body.ts, ...) throws DomainErrors: their status is theirs.
  const given = error instanceof DomainError ? error.status : error.statusCode;
  const status = csrfRefused ? 403 : given && given < 500 ? given : 500;
  // (An ApiError's 502 is shown as a failure on our side, like any other 5xx.)
  if (status >= 500) request.log.error({ err: error }, 'console page failed');
  const message = csrfRefused
    ? 'This form has expired or did not come from the console. Reload the page and submit it again.'
    : status === 415
      ? 'The console takes its forms as application/x-www-form-urlencoded, as a browser sends them; use the API for JSON.'
      : status >= 500
        ? 'Something went wrong on our side. Try again; if it keeps happening, quote the request id to support.'
        : error.message;
  return reply
    .code(status)
    .header('content-security-policy', CONSOLE_POLICY)
    .view('error', {
      title: status === 403 ? 'Refused' : 'Error',
      message,
      requestId: request.id,
      signedIn: Boolean(request.cookies?.[SESSION_COOKIE]),
    });
}
