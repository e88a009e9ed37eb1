import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/**
 * AES-256-GCM for secrets at rest (TOTP seeds, third-party tokens), under a key derived with HKDF from the
 * deploy's secret key. The `context` is bound as associated data, so a ciphertext copied to another row or
 * purpose does not decrypt.
 */
export class SecretBox {
  readonly #key: Buffer;
  constructor(secretKey: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'ark-secrets-at-rest-v1', 32));
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** Throws when the ciphertext was altered, moved to another context, or sealed under another key. */
  open(sealed: string, context: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('unknown sealed secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** Where a TOTP seed is sealed: bound to its account, so a seed copied to another row does not open. */
export const totpContext = (accountId: string): string => `totp:${accountId}`;
export const integrationContext = (accountId: string, provider: string): string => `integration:${accountId}:${provider}`;
