import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../http/context.js';
import { ApiError, ConsoleApi, apiErrorText } from './api.js';
import { duration, gib, gpus, percent, usd, usdInput, when } from './format.js';

/** The console's pages load scripts, styles and data from this origin only; no inline script or style runs. */
export const CONSOLE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export { SESSION_COOKIE } from './cookies.js';
import { SESSION_COOKIE } from './cookies.js';
const FLASH_COOKIE = 'ark_flash';

export interface ConsoleScope {
  scope: FastifyInstance;
  ctx: AppContext;
  /** Cookies are Secure when the public URL is https. */
  secure: boolean;
}

export interface Account {
  account_id: string;
  email: string;
  role: 'renter' | 'host' | 'admin';
  host_enabled: boolean;
  email_verified: boolean;
  two_factor_enabled: boolean;
  step_up_method: string;
  name?: string | null;
}

export interface Signed {
  api: ConsoleApi;
  account: Account;
}

export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

type Handler<P> = (
  request: FastifyRequest<{ Params: P; Querystring: Record<string, string>; Body: Record<string, string> }>,
  reply: FastifyReply,
) => Promise<unknown>;

const routeOptions = { config: { auth: 'public' as const, pagePolicy: CONSOLE_POLICY }, schema: { hide: true } };

/** A console page (GET). */
export function page<P = Record<string, string>>(c: ConsoleScope, path: string, handler: Handler<P>): void {
  c.scope.get(path, routeOptions, handler as never);
}

/** A console form action (POST, CSRF-checked by the scope's hook). */
export function action<P = Record<string, string>>(c: ConsoleScope, path: string, handler: Handler<P>): void {
  c.scope.post(path, routeOptions, handler as never);
}

/** An API client for this request: the cookie's session, or none. */
export function apiFor(c: ConsoleScope, request: FastifyRequest): ConsoleApi {
  return new ConsoleApi(c.scope, request.cookies[SESSION_COOKIE] ?? null, request.ip);
}

/**
 * The person signed in, or null after answering a redirect to the sign-in page (no cookie, or a session the
 * service no longer accepts: expired or signed out elsewhere).
 */
export async function signedIn(c: ConsoleScope, request: FastifyRequest, reply: FastifyReply): Promise<Signed | null> {
  const api = apiFor(c, request);
  if (request.cookies[SESSION_COOKIE]) {
    const answer = await api.call<Account>('GET', '/api/v1/account');
    if (answer.status === 200) return { api, account: answer.body };
    if (answer.status !== 401) throw new ApiError(answer);
    reply.clearCookie(SESSION_COOKIE, { path: '/console' });
  }
  // Back to this page after signing in (a deep link: the pairing page with its code, a job).
  await reply.redirect(request.method === 'GET' ? `/console/login?next=${encodeURIComponent(request.url)}` : '/console/login', 303);
  return null;
}

/** Where to go after signing in: a console page of this origin, nothing else (no open redirect). */
export function safeNext(next: unknown): string {
  if (typeof next !== 'string' || next.length > 512) return '/console';
  return /^\/console(?:[/?#]|$)/.test(next) && !next.includes('\\') && !next.startsWith('//') ? next : '/console';
}

export function setSession(c: ConsoleScope, reply: FastifyReply, token: string, expiresAt: string | undefined): void {
  const expires = expiresAt ? new Date(expiresAt) : undefined;
  reply.setCookie(SESSION_COOKIE, token, {
    path: '/console',
    httpOnly: true,
    sameSite: 'strict',
    secure: c.secure,
    ...(expires && !Number.isNaN(expires.getTime()) ? { expires } : {}),
  });
}

/** The message the next page shows once (a short-lived cookie, so nothing is reflected from the URL). */
export function flash(c: ConsoleScope, reply: FastifyReply, kind: Flash['kind'], text: string): void {
  reply.setCookie(FLASH_COOKIE, JSON.stringify({ kind, text: text.slice(0, 500) }), {
    path: '/console',
    httpOnly: true,
    sameSite: 'strict',
    secure: c.secure,
    maxAge: 60,
  });
}

function takeFlash(request: FastifyRequest, reply: FastifyReply): Flash | null {
  const raw = request.cookies[FLASH_COOKIE];
  if (!raw) return null;
  reply.clearCookie(FLASH_COOKIE, { path: '/console' });
  try {
    const parsed = JSON.parse(raw) as Flash;
    return (parsed.kind === 'ok' || parsed.kind === 'error') && typeof parsed.text === 'string' ? parsed : null;
  } catch {
    return null;
  }
}

export interface NavLink {
  href: string;
  label: string;
}

/** The sections a person sees: renting for everyone, hosting for hosts, operations for admins. */
export function navigation(account: Account | null): Array<{ section: string; links: NavLink[] }> {
  if (!account) return [];
  const sections = [
    {
      section: 'Renting',
      links: [
        { href: '/console/offers', label: 'Marketplace' },
        { href: '/console/jobs', label: 'Jobs' },
        { href: '/console/keys', label: 'SSH keys' },
        { href: '/console/balance', label: 'Balance' },
        { href: '/console/tickets', label: 'Support' },
      ],
    },
  ];
  if (account.role === 'host' || account.host_enabled || account.role === 'admin') {
    sections.push({
      section: 'Hosting',
      links: [
        { href: '/console/machines', label: 'Machines' },
        { href: '/console/pair', label: 'Pair a rig' },
        { href: '/console/earnings', label: 'Earnings' },
        { href: '/console/market', label: 'Market' },
      ],
    });
  }
  if (account.role === 'admin') {
    sections.push({
      section: 'Operations',
      links: [
        { href: '/console/admin', label: 'Fleet' },
        { href: '/console/admin/withdrawals', label: 'Withdrawals' },
        { href: '/console/admin/deposits', label: 'Deposits' },
        { href: '/console/admin/subsystems', label: 'Subsystems' },
        { href: '/console/admin/tickets', label: 'Tickets' },
      ],
    });
  }
  return sections;
}

/** Renders a page inside the layout, with the navigation, the flash and a fresh CSRF token for its forms. */
export async function render(
  request: FastifyRequest,
  reply: FastifyReply,
  template: string,
  data: { title: string; account: Account | null; [key: string]: unknown },
  status = 200,
): Promise<unknown> {
  const csrfToken = await reply.generateCsrf();
  return reply.code(status).view(template, {
    ...data,
    csrf: csrfToken,
    flash: (data.flash as Flash | undefined) ?? takeFlash(request, reply),
    nav: navigation(data.account),
    path: request.url.split('?')[0],
    usd,
    usdInput,
    gpus,
    duration,
    when,
    gib,
    percent,
  });
}

/**
 * Runs a form's API call and redirects back with what happened (POST-redirect-GET: a reload never resubmits).
 * `step` turns an error into the sentence the person reads; STEP_UP_REQUIRED asks for a fresh code.
 */
export async function perform(c: ConsoleScope, reply: FastifyReply, back: string, work: () => Promise<string>): Promise<unknown> {
  try {
    flash(c, reply, 'ok', await work());
  } catch (error) {
    if (!(error instanceof ApiError) && !(error instanceof FormError)) throw error;
    const text =
      error instanceof ApiError && error.code === 'STEP_UP_REQUIRED'
        ? `${apiErrorText(error.answer)} Enter a current code from your authenticator app.`
        : error.message;
    flash(c, reply, 'error', text);
  }
  return reply.redirect(back, 303);
}

/** A form field the person got wrong, said in their words. */
export class FormError extends Error {}

/**
 * The proof a form carries for the account's step-up method (`step_up` field: the password, or a TOTP code) steps
 * the session up before a sensitive action; skipped when left empty (a recent step-up may still be fresh).
 */
export async function stepUpWithProof(api: ConsoleApi, account: Account, proof: string | undefined): Promise<void> {
  if (account.step_up_method === 'totp') return stepUpWith(api, proof);
  if ((proof ?? '') === '') return;
  if (account.step_up_method !== 'password')
    throw new FormError('This account steps up with its wallet or provider: use the API or the CLI.');
  await api.post('/api/v1/account/step-up', { password: proof });
}

/** A TOTP code typed into a form steps the session up before a sensitive action (skipped when left empty). */
export async function stepUpWith(api: ConsoleApi, code: string | undefined): Promise<void> {
  const trimmed = (code ?? '').replace(/\s+/g, '');
  if (trimmed === '') return;
  if (!/^[0-9]{6}$/.test(trimmed)) throw new FormError('The authenticator code is six digits.');
  await api.post('/api/v1/account/step-up', { totp_code: trimmed });
}

/** A required text field of a form. */
export function field(body: Record<string, string> | undefined, name: string, label: string): string {
  const value = body?.[name];
  if (typeof value !== 'string' || value.trim() === '') throw new FormError(`${label} is required.`);
  return value.trim();
}
