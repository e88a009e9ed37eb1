import { createHmac, randomBytes } from 'node:crypto';

// Standard Webhooks v1 signing: `whsec_` + base64 key; the signature is `v1,` + base64(HMAC-SHA256(key,
// `${id}.${timestamp}.${body}`)); during a rotation every live secret signs and the header lists them space separated.

const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 24;

/** A fresh endpoint secret, as shown once to its owner. */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** One `v1,<signature>` entry for one secret. */
export function signatureOf(secret: string, id: string, timestampS: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestampS}.${body}`).digest('base64')}`;
}

/** The three headers of one delivery attempt, signed by every live secret (current first). */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  at: Date,
  body: string,
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const timestampS = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': secrets.map((secret) => signatureOf(secret, id, timestampS, body)).join(' '),
  };
}
