import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from './secret-box.js';

describe('SecretBox', () => {
  const key = randomBytes(32);
  const box = new SecretBox(key);

  it('round-trips and never stores the plaintext', () => {
    const sealed = box.seal('hf_secret_token', 'integration:a:model-hub');
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('hf_secret_token');
    expect(box.open(sealed, 'integration:a:model-hub')).toBe('hf_secret_token');
    expect(box.seal('hf_secret_token', 'integration:a:model-hub')).not.toBe(sealed);
  });

  it('refuses another context, another key, or an altered ciphertext', () => {
    const sealed = box.seal('seed', 'totp:a');
    expect(() => box.open(sealed, 'totp:b')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'totp:a')).toThrow();
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = (body[0] ?? 0) ^ 1;
    expect(() => box.open([parts[0], parts[1], parts[2], body.toString('base64url')].join('.'), 'totp:a')).toThrow();
    expect(() => box.open('v0.a.b.c', 'totp:a')).toThrow();
  });
});
