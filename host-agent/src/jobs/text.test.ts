import { SECRET_MIN_CHARS } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { boundedText, redact } from './text.js';

describe('detail text', () => {
  it('strips control characters and keeps the end of long text', () => {
    expect(boundedText('a\u001b[31mred\u0007\r\nline\ttab')).toBe('a[31mred\nline\ttab');
    const long = boundedText('x'.repeat(5000) + 'END', 100);
    expect(long).toHaveLength(100);
    expect(long.endsWith('END')).toBe(true);
  });

  it('redacts secrets long enough to be secrets', () => {
    expect(redact('key=sk-abcdefgh and short=ab', ['sk-abcdefgh', 'ab'])).toBe('key=[redacted] and short=ab');
  });

  it('applies the same threshold as the control plane, the longest secret first', () => {
    expect(SECRET_MIN_CHARS).toBe(6);
    expect(redact('pin 123456 and 12345', ['123456', '12345'])).toBe('pin [redacted] and 12345');
    expect(redact('token abcdef-123456', ['abcdef', 'abcdef-123456'])).toBe('token [redacted]');
  });
});
