import type { AppContext } from '../context.js';
import type { TypedApp } from '../typed-app.js';

// What a person reaches without a path: `/` leads to the web console, `/favicon.ico` is the console's icon, and the
// RFC 8628 verification page a pairing announces (`/pair`, `?code=` in its complete form) is the console's pairing
// page, which asks to sign in first and comes back with the code.

export function registerPairPageRoutes(app: TypedApp, _ctx: AppContext): void {
  const page = { config: { auth: 'public' as const, cache: 'public' as const }, schema: { hide: true } };
  app.get('/', page, async (_request, reply) => reply.redirect('/console', 302));
  app.get('/favicon.ico', page, async (_request, reply) => reply.redirect('/console/assets/favicon.svg', 301));
  app.get<{ Querystring: { code?: string } }>('/pair', page, async (request, reply) => {
    const code = typeof request.query.code === 'string' ? request.query.code.trim().slice(0, 32) : '';
    return reply.redirect(code === '' ? '/console/pair' : `/console/pair?code=${encodeURIComponent(code)}`, 302);
  });
}
