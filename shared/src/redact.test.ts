import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecret, SECRET_MIN_CHARS } from './redact.js';

describe('redactSecret', () => {
  it('redacts every occurrence of each secret, the longest first', () => {
    expect(redactSecret('a hunter22 b hunter22', ['hunter22'])).toBe(`a ${REDACTED} b ${REDACTED}`);
    expect(redactSecret('token abcdef-123456', ['abcdef', 'abcdef-123456'])).toBe(`token ${REDACTED}`);
    expect(redactSecret('key=sk-abcdefgh', ['sk-abcdefgh'], '[redacted]')).toBe('key=[redacted]');
  });

  it('leaves values shorter than the minimum alone', () => {
    expect(SECRET_MIN_CHARS).toBe(6);
    expect(redactSecret('exit 1 after 1 s', ['1', 'after'])).toBe('exit 1 after 1 s');
    expect(redactSecret('pin 123456', ['123456'])).toBe(`pin ${REDACTED}`);
  });
});
