import { describe, expect, it } from 'vitest';
import { REDACTED, sanitizeData, sanitizeText, stripControl } from './sanitize.js';

describe('sanitizeText', () => {
  it('strips control characters and ANSI escapes, keeping newlines and tabs', () => {
    expect(stripControl('a\x00b\x07c\x1b[31mred\x1b[0m\x7f\x9b\td\ne')).toBe('abcred\td\ne');
    expect(stripControl('x\x1b]0;title\x07y')).toBe('xy');
    expect(sanitizeText('bell\x07 and \r carriage')).toBe('bell and  carriage');
  });

  it('redacts the given secrets and the shapes of known ones', () => {
    const key = 'Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg';
    const text = `engine key ${key} token=abcdef123 Authorization: Bearer abcdefghijklmnop ark_0123456789abcdef MY_SECRET: "s3cr3t!"`;
    const out = sanitizeText(text, [key, 'hunter22']);
    expect(out).not.toContain(key);
    expect(out).not.toContain('abcdef123');
    expect(out).not.toContain('abcdefghijklmnop');
    expect(out).not.toContain('ark_0123456789abcdef');
    expect(out).not.toContain('s3cr3t');
    expect(out).toContain(REDACTED);
    expect(sanitizeText('password hunter22 leaked', ['hunter22'])).toBe(`password ${REDACTED} leaked`);
  });

  it('does not redact short values (they would blot out every message)', () => {
    expect(sanitizeText('exit 1 after 1 s', ['1'])).toBe('exit 1 after 1 s');
  });

  it('bounds the length', () => {
    const out = sanitizeText('x'.repeat(5000));
    expect(out.length).toBe(2000);
    expect(out.endsWith('…')).toBe(true);
  });

  it('sanitizes strings inside event data, bounded in depth and size', () => {
    const data = sanitizeData({ detail: 'api_key=supersecretvalue\x00', nested: { list: ['ok', 'hunter22'] }, n: 3, big: 5n }, [
      'hunter22',
    ]);
    expect(data).toEqual({ detail: `api_key=${REDACTED}`, nested: { list: ['ok', REDACTED] }, n: 3, big: '5' });
  });
});
