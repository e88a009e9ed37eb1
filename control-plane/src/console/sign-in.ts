import { apiErrorText } from './api.js';
import { consoleOAuthCookie } from './cookies.js';
import { type ConsoleScope, SESSION_COOKIE, action, apiFor, page, render, safeNext, setSession, signedIn } from './session.js';

/** Sign-in, sign-out and the overview: the same sessions as POST /api/v1/auth/sessions. */
export function registerSessionPages(c: ConsoleScope): void {
  page(c, '/login', async (request, reply) => {
    if (request.cookies[SESSION_COOKIE]) {
      const answer = await apiFor(c, request).call('GET', '/api/v1/account');
      if (answer.status === 200) return reply.redirect(safeNext(request.query.next), 303);
    }
    return render(request, reply, 'login', {
      title: 'Sign in',
      account: null,
      email: '',
      next: safeNext(request.query.next),
      providers: providers(c),
    });
  });

  // Sign-in with GitHub or Google: the API's own OAuth flow, with a marker on the callback's path so that the
  // callback sets the console's cookie and comes back here instead of answering the session as JSON.
  page<{ provider: string }>(c, '/login/:provider', async (request, reply) => {
    const provider = request.params.provider;
    if (!providers(c).includes(provider)) return reply.redirect('/console/login', 303);
    const maxAgeS = Math.ceil(c.ctx.config.oauth.stateTtlMs / 1000);
    return reply
      .header('set-cookie', consoleOAuthCookie(provider, maxAgeS, c.secure))
      .redirect(`/api/v1/auth/oauth/${provider}/start`, 303);
  });

  action(c, '/login', async (request, reply) => {
    const email = String(request.body?.email ?? '').trim();
    const password = String(request.body?.password ?? '');
    const answer = await apiFor(c, request).call('POST', '/api/v1/auth/sessions', { email, password });
    if (answer.status === 200 || answer.status === 201) {
      setSession(c, reply, answer.body.session_token as string, answer.body.expires_at as string | undefined);
      return reply.redirect(safeNext(request.body?.next), 303);
    }
    const text = answer.status === 401 || answer.status === 422 ? 'The email or the password is wrong.' : apiErrorText(answer);
    return render(
      request,
      reply,
      'login',
      {
        title: 'Sign in',
        account: null,
        email,
        next: safeNext(request.body?.next),
        providers: providers(c),
        flash: { kind: 'error', text },
      },
      answer.status === 429 ? 429 : 401,
    );
  });

  action(c, '/logout', async (request, reply) => {
    // Ends the session at the service too, not only in this browser.
    if (request.cookies[SESSION_COOKIE]) await apiFor(c, request).call('DELETE', '/api/v1/auth/sessions/current');
    reply.clearCookie(SESSION_COOKIE, { path: '/console' });
    return reply.redirect('/console/login', 303);
  });

  page(c, '/', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const balance = await who.api.call('GET', '/api/v1/billing/balance?limit=1');
    const jobs = await who.api.call('GET', '/api/v1/jobs?limit=5');
    const hosting = who.account.role === 'host' || who.account.host_enabled;
    const machines = hosting ? await who.api.call('GET', '/api/v1/hosts/machines?limit=100') : null;
    return render(request, reply, 'overview', {
      title: 'Overview',
      account: who.account,
      balance: balance.status === 200 ? balance.body : null,
      jobs: jobs.status === 200 ? jobs.body.items : [],
      machines: machines?.status === 200 ? machines.body.items : null,
    });
  });
}

/** The sign-in providers the operator configured. */
function providers(c: ConsoleScope): string[] {
  const oauth = c.ctx.config.oauth;
  return [...(oauth.github ? ['github'] : []), ...(oauth.google ? ['google'] : [])];
}
