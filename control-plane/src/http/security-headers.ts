import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { routeOptionsOf } from './route-options.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The policy of the HTML pages this route serves, instead of the one computed from the page (the API reference). */
    pagePolicy?: string;
  }
}

/** JSON answers are never a document: nothing may load, nothing may frame them. */
const API_CSP = "default-src 'none'; frame-ancestors 'none'";
const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * The headers every answer carries, whichever layer writes it: no MIME sniffing, no referrer, no framing, and HSTS
 * when the public URL is https (a plain-http deployment must not pin browsers to https it does not serve).
 */
export function securityHeaders(publicBaseUrl: string): Readonly<Record<string, string>> {
  return Object.freeze({
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'content-security-policy': API_CSP,
    ...(publicBaseUrl.startsWith('https:') ? { 'strict-transport-security': HSTS } : {}),
  });
}

const INLINE = /<(script|style)(?:\s[^>]*)?>([\s\S]*?)<\/\1\s*>/gi;
const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * A strict policy for one HTML page: its own inline scripts and styles are allowed by hash, nothing else runs, it
 * may call back only to this origin, and no other site may frame it. (Inline event handlers and style attributes
 * are refused: a page keeps them in its script and style elements.)
 */
export function htmlPagePolicy(html: string): string {
  const scripts: string[] = [];
  const styles: string[] = [];
  for (const [, tag, body] of html.matchAll(INLINE)) (tag?.toLowerCase() === 'script' ? scripts : styles).push(sha256(body ?? ''));
  return [
    "default-src 'none'",
    `script-src ${scripts.length > 0 ? scripts.join(' ') : "'none'"}`,
    `style-src ${styles.length > 0 ? styles.join(' ') : "'none'"}`,
    "img-src 'self'",
    "connect-src 'self'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** Policies of the pages served so far, by page text: pages are a few constants, the map stays this small. */
const MAX_POLICIES = 32;

/**
 * `andThen`: what else every request needs before its route runs (the app's request id and cache headers), in the
 * same hook: one hook fewer on every request.
 */
export function installSecurityHeaders(
  app: FastifyInstance,
  headers: Readonly<Record<string, string>>,
  andThen?: (request: FastifyRequest, reply: FastifyReply) => void,
): void {
  // Names and values taken apart once, not per request (reply.headers() walks Object.keys each time).
  const names = Object.keys(headers);
  const values = names.map((name) => headers[name] as string);
  // onRequest, so every answer of a route (errors and 404s included) has them before anything is written.
  app.addHook('onRequest', (request, reply, done) => {
    for (let i = 0; i < names.length; i++) reply.header(names[i] as string, values[i]);
    andThen?.(request, reply);
    done();
  });
  const policies = new Map<string, string>();
  // An HTML page gets its declared policy, or the strict one computed from what the page actually contains.
  const pagePolicy: onSendHookHandler = (request, reply, payload, done) => {
    const type = reply.getHeader('content-type');
    const declared = routeOptionsOf(request).config?.pagePolicy;
    if (declared !== undefined && typeof type === 'string' && type.startsWith('text/html'))
      reply.header('content-security-policy', declared);
    else if (typeof type === 'string' && type.startsWith('text/html')) {
      // A streamed page cannot be hashed: it gets the policy of a page with no script or style at all.
      const page = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
      let policy = policies.get(page);
      if (policy === undefined) {
        policy = htmlPagePolicy(page);
        if (policies.size < MAX_POLICIES) policies.set(page, policy);
      }
      reply.header('content-security-policy', policy);
    }
    done(null, payload);
  };
  // Only routes outside /api/ serve pages (the console, the API reference, the pairing page). The API's answers are
  // JSON and keep the API policy set above, so they skip this hook: an onSend hook costs every answer that has one.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/api/')) return;
    const own = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend];
    route.onSend = [...own, pagePolicy];
  });
}
