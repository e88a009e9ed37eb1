// Sign-in providers on loopback for the sign-in tests: a real OpenID provider (oidc-provider 8.8.1, the newest that
// supports Node 20) standing in for Google, and a GitHub-shaped OAuth server (authorize, token, /user, /user/emails)
// written here, checking PKCE like GitHub does. A "browser" follows redirects by hand with a cookie jar.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import Provider from 'oidc-provider';

/** Who a provider says signed in: the test sets it before each sign-in. */
export interface ProviderUser {
  subject: string;
  email: string;
  emailVerified: boolean;
  name: string;
}

export async function listen(server: Server, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

export const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections?.();
    server.close(() => resolve());
  });

// ---- Google: oidc-provider

export interface OidcProviderHandle {
  issuer: string;
  clientId: string;
  clientSecret: string;
  server: Server;
  /** The person the next interaction signs in as. */
  signInAs(user: ProviderUser): void;
}

/** A real OpenID provider whose interactions sign in (and consent) as the user the test chose, with no form. */
export async function startOidcProvider(port: number, redirectUri: string): Promise<OidcProviderHandle> {
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = 'ark-google-client';
  const clientSecret = randomBytes(16).toString('hex');
  const users = new Map<string, ProviderUser>();
  let current: ProviderUser | null = null;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        // As Google documents it: the secret in the form body.
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: (_ctx, id) => {
      const user = users.get(id);
      if (!user) return undefined;
      return { accountId: id, claims: () => ({ sub: id, email: user.email, email_verified: user.emailVerified, name: user.name }) };
    },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  const handler = provider.callback();
  const server = createServer((request, response) => {
    if (!request.url?.startsWith('/interaction/')) return handler(request, response);
    void (async () => {
      const details = await provider.interactionDetails(request, response);
      if (current === null) throw new Error('no user chosen for the OpenID provider');
      users.set(current.subject, current);
      const grant = new provider.Grant({ accountId: current.subject, clientId });
      grant.addOIDCScope(details.params.scope ?? 'openid');
      const grantId = await grant.save();
      await provider.interactionFinished(
        request,
        response,
        { login: { accountId: current.subject }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
    })().catch((error: Error) => {
      response.writeHead(500).end(error.message);
    });
  });
  await listen(server, port);
  return {
    issuer,
    clientId,
    clientSecret,
    server,
    signInAs(user) {
      current = user;
    },
  };
}

// ---- GitHub: an OAuth 2.0 server shaped like github.com and api.github.com

export interface GithubHandle {
  base: string;
  clientId: string;
  clientSecret: string;
  server: Server;
  signInAs(user: ProviderUser): void;
  /** Token requests as they arrived (form fields), for the test to inspect. */
  tokenRequests: Array<Record<string, string>>;
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * GitHub's web application flow as documented: GET /login/oauth/authorize (S256 PKCE), POST
 * /login/oauth/access_token answering JSON errors with HTTP 200 (bad_verification_code, incorrect_client_credentials),
 * GET /user and GET /user/emails with the token, 401 without.
 */
export async function startGithub(port: number, redirectUri: string): Promise<GithubHandle> {
  const base = `http://127.0.0.1:${port}`;
  const clientId = `Iv1.${randomBytes(8).toString('hex')}`;
  const clientSecret = randomBytes(20).toString('hex');
  let current: ProviderUser | null = null;
  const codes = new Map<string, { user: ProviderUser; challenge: string; redirectUri: string }>();
  const tokens = new Map<string, ProviderUser>();
  const tokenRequests: Array<Record<string, string>> = [];
  const json = (response: import('node:http').ServerResponse, status: number, body: unknown) =>
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));

  const server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', base);
      if (request.method === 'GET' && url.pathname === '/login/oauth/authorize') {
        const q = url.searchParams;
        if (q.get('client_id') !== clientId) return json(response, 404, { message: 'Not Found' });
        if (q.get('redirect_uri') !== redirectUri)
          return response.writeHead(400).end('The redirect_uri is not associated with this application.');
        if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) return response.writeHead(400).end('PKCE S256 required');
        if (current === null) throw new Error('no user chosen for GitHub');
        const code = randomBytes(10).toString('hex');
        codes.set(code, { user: current, challenge: q.get('code_challenge') as string, redirectUri });
        const back = new URL(redirectUri);
        back.searchParams.set('code', code);
        back.searchParams.set('state', q.get('state') ?? '');
        return response.writeHead(302, { location: back.href }).end();
      }
      if (request.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        const form = Object.fromEntries(new URLSearchParams(await bodyOf(request)));
        tokenRequests.push(form);
        if (form.client_id !== clientId || form.client_secret !== clientSecret) {
          return json(response, 200, {
            error: 'incorrect_client_credentials',
            error_description: 'The client_id and/or client_secret passed are incorrect.',
          });
        }
        const issued = codes.get(form.code ?? '');
        codes.delete(form.code ?? '');
        if (!issued || form.redirect_uri !== issued.redirectUri) {
          return json(response, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
        }
        if (!form.code_verifier || s256(form.code_verifier) !== issued.challenge) {
          return json(response, 200, {
            error: 'bad_verification_code',
            error_description: 'The code_verifier does not match the code_challenge.',
          });
        }
        const token = `gho_${randomBytes(18).toString('hex')}`;
        tokens.set(token, issued.user);
        return json(response, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
      }
      const auth = /^(?:Bearer|token) (.+)$/i.exec(request.headers.authorization ?? '');
      const user = auth ? tokens.get(auth[1] as string) : undefined;
      if (request.method === 'GET' && (url.pathname === '/user' || url.pathname === '/user/emails')) {
        if (!user) return json(response, 401, { message: 'Requires authentication', status: '401' });
        if (url.pathname === '/user')
          return json(response, 200, { id: Number(user.subject), login: user.name.toLowerCase(), name: user.name });
        return json(response, 200, [
          { email: `${user.subject}+noreply@users.noreply.github.test`, primary: false, verified: true, visibility: null },
          { email: user.email, primary: true, verified: user.emailVerified, visibility: 'private' },
        ]);
      }
      return json(response, 404, { message: 'Not Found' });
    })().catch((error: Error) => response.writeHead(500).end(error.message));
  });
  await listen(server, port);
  return {
    base,
    clientId,
    clientSecret,
    server,
    tokenRequests,
    signInAs(user) {
      current = user;
    },
  };
}

// ---- the browser

/** A browser without JavaScript: cookies per origin, redirects followed one by one. */
export class Browser {
  readonly #jar = new Map<string, Map<string, string>>();

  async get(url: string): Promise<Response> {
    const target = new URL(url);
    const cookies = this.#jar.get(target.origin);
    const response = await fetch(target, {
      redirect: 'manual',
      headers: cookies && cookies.size > 0 ? { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {},
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const [name = '', ...value] = pair.trim().split('=');
      const jar = this.#jar.get(target.origin) ?? new Map<string, string>();
      this.#jar.set(target.origin, jar);
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value.join('=') === '';
      if (expired) jar.delete(name);
      else jar.set(name, value.join('='));
    }
    return response;
  }

  /** Follows redirects from `url` until one points under `stopAt`; answers that URL without calling it. */
  async followUntil(url: string, stopAt: string): Promise<string> {
    let next = url;
    for (let hop = 0; hop < 10; hop++) {
      if (next.startsWith(stopAt)) return next;
      const response = await this.get(next);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) {
        throw new Error(`${next} answered ${response.status} without a redirect: ${await response.text()}`);
      }
      await response.body?.cancel();
      next = new URL(location, next).href;
    }
    throw new Error(`too many redirects from ${url}`);
  }

  /** GET with the body parsed as JSON. */
  async json(url: string): Promise<{ status: number; body: any }> {
    const response = await this.get(url);
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text) };
  }
}
