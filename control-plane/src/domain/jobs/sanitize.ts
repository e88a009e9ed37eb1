import { REDACTED, redactSecret } from '@ark/shared';

// Job event text comes partly from agents (container output, failure details): before it is stored and shown it
// is stripped of control characters, has anything that looks like a secret redacted, and is bounded.

export const EVENT_MESSAGE_MAX_LENGTH = 2000;
export { REDACTED };

/**
 * Drops ANSI escape sequences whole (so "ESC[31m" does not leave "[31m" behind) and every other control character
 * except newline and tab, including DEL and the C1 range.
 */
export function stripControl(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === 0x1b) {
      const next = text[i + 1];
      if (next === '[') {
        // CSI: parameters and intermediates, then one final byte in @..~.
        i += 2;
        while (i < text.length && !(text.charCodeAt(i) >= 0x40 && text.charCodeAt(i) <= 0x7e)) i += 1;
        i += 1;
      } else if (next === ']') {
        // OSC: up to BEL or ESC backslash.
        i += 2;
        while (i < text.length && text.charCodeAt(i) !== 0x07 && !(text.charCodeAt(i) === 0x1b && text[i + 1] === '\\')) i += 1;
        i += text.charCodeAt(i) === 0x07 ? 1 : 2;
      } else {
        i += 2;
      }
      continue;
    }
    const control = (code < 0x20 && code !== 0x0a && code !== 0x09) || (code >= 0x7f && code <= 0x9f);
    if (!control) out += text[i];
    i += 1;
  }
  return out;
}

const PATTERNS: Array<[RegExp, string]> = [
  // Our own API keys and session tokens.
  [/\bark_[A-Za-z0-9_-]{8,}/g, REDACTED],
  // Authorization headers.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // key=value and key: value pairs whose key names a secret.
  [
    /\b([A-Za-z0-9_.-]*(?:api[_-]?key|token|secret|password|passwd|credential)[A-Za-z0-9_.-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;]+)/gi,
    `$1$2${REDACTED}`,
  ],
  // Private keys pasted whole.
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, REDACTED],
];

/** Control characters out, secrets (the given values and known shapes) redacted, at most `maxLength` characters. */
export function sanitizeText(text: string, secrets: readonly string[] = [], maxLength = EVENT_MESSAGE_MAX_LENGTH): string {
  let out = redactSecret(stripControl(text), secrets);
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  if (out.length > maxLength) out = `${out.slice(0, Math.max(0, maxLength - 1))}…`;
  return out;
}

/** Sanitizes every string inside a small JSON value (event data), bounding depth and size. */
export function sanitizeData(value: unknown, secrets: readonly string[] = [], depth = 0): unknown {
  if (typeof value === 'string') return sanitizeText(value, secrets);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
  if (typeof value === 'bigint') return value.toString();
  if (depth >= 4) return null;
  if (Array.isArray(value)) return value.slice(0, 32).map((v) => sanitizeData(v, secrets, depth + 1));
  if (typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>).slice(0, 32)) {
      if (v === undefined) continue;
      out[sanitizeText(k, secrets, 64)] = sanitizeData(v, secrets, depth + 1);
    }
    return out;
  }
  return null;
}
