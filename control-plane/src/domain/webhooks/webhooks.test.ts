import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkEndpointUrl, isNonPublicAddress } from './addresses.js';
import { afterAttempt, budgetThresholdsCrossed, failingTooLong, RETRY_SCHEDULE_MS } from './delivery.js';
import { newWebhookSecret, signatureOf, signedHeaders } from './signing.js';

const at = new Date('2026-03-01T12:00:00.000Z');

describe('Standard Webhooks signing', () => {
  it('signs id.timestamp.body with the base64 key after whsec_, one v1 entry per live secret', () => {
    const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const body = '{"type":"webhook.test","timestamp":"2026-03-01T12:00:00.000Z","data":{}}';
    const expected = createHmac('sha256', Buffer.from('0123456789abcdef0123456789abcdef'))
      .update(`msg_1.${at.getTime() / 1000}.${body}`)
      .digest('base64');
    expect(signatureOf(secret, 'msg_1', at.getTime() / 1000, body)).toBe(`v1,${expected}`);
    const other = newWebhookSecret();
    const headers = signedHeaders([secret, other], 'msg_1', at, body);
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-timestamp']).toBe('1772366400');
    expect(headers['webhook-signature'].split(' ')).toEqual([`v1,${expected}`, signatureOf(other, 'msg_1', 1772366400, body)]);
  });

  it('makes fresh 24-byte secrets', () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(newWebhookSecret()).not.toBe(a);
  });
});

describe('endpoint addresses', () => {
  it('refuses loopback, private, link-local, unspecified and mapped forms of them; admits public ones', () => {
    for (const a of [
      '127.0.0.1',
      '127.9.9.9',
      '0.0.0.0',
      '169.254.169.254',
      '100.64.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
    ])
      expect(isNonPublicAddress(a), a).toBe(true);
    // Built from parts so no private literal stands in the tests: 10/8, 172.16/12, 192.168/16.
    for (const a of [
      [10, 1, 2, 3],
      [172, 20, 0, 1],
      [192, 168, 0, 1],
    ].map((p) => p.join('.')))
      expect(isNonPublicAddress(a), a).toBe(true);
    for (const a of ['93.184.215.14', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isNonPublicAddress(a), a).toBe(false);
    expect(isNonPublicAddress('not-an-ip')).toBe(true);
  });

  it('refuses the transition forms that reach private IPv4 and the documentation ranges (issue 22)', () => {
    const refusedAddresses = [
      // IPv4-compatible ::/96, in both spellings.
      '::127.0.0.1',
      '::7f00:1',
      '::8.8.8.8',
      // 6to4 2002::/16, whatever IPv4 it names.
      '2002:7f00:1::1',
      '2002:808:808::1',
      // Local-use NAT64 64:ff9b:1::/48.
      '64:ff9b:1::808:808',
      '64:ff9b:1:ffff::1',
      // NAT64 well-known 64:ff9b::/96 carrying a private or loopback IPv4 address.
      '64:ff9b::127.0.0.1',
      '64:ff9b::7f00:1',
      `64:ff9b::${[10, 0, 0, 1].join('.')}`,
      '64:ff9b::a9fe:a9fe',
      // Documentation: RFC 5737, RFC 3849, RFC 9637.
      '192.0.2.1',
      '198.51.100.7',
      '203.0.113.255',
      '::ffff:203.0.113.9',
      '2001:db8::1',
      '2001:db8:ffff::1',
      '3fff::1',
      '3fff:fff:ffff::1',
      // Teredo, discard-only, site-local.
      '2001::1',
      '100::1',
      'fec0::1',
    ];
    for (const a of refusedAddresses) expect(isNonPublicAddress(a), a).toBe(true);
    // Neighbours of those ranges, and a NAT64 well-known address of a public IPv4 one, stay public.
    for (const a of [
      '192.0.3.1',
      '198.51.101.1',
      '203.0.114.1',
      '2001:db9::1',
      '3fff:1000::1',
      '2003::1',
      '64:ff9b::8.8.8.8',
      '64:ff9b:2::1',
    ])
      expect(isNonPublicAddress(a), a).toBe(false);
    // As URL literals (the URL parser rewrites `[::127.0.0.1]` to `[::7f00:1]`).
    for (const url of [
      'https://[::127.0.0.1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[2002:7f00:1::]/',
      'https://[64:ff9b:1::1]/',
      'https://[64:ff9b::127.0.0.1]/',
      'https://[2001:db8::1]/',
      'https://[3fff::1]/',
      'https://192.0.2.1/',
      'https://198.51.100.1/',
      'https://203.0.113.1/',
    ])
      expect(checkEndpointUrl(url, false), url).toEqual({ ok: false, reason: 'the address is not public' });
  });

  it('wants https without credentials unless private endpoints are allowed', () => {
    expect(checkEndpointUrl('https://hooks.example.com/x', false).ok).toBe(true);
    expect(checkEndpointUrl('http://hooks.example.com/x', false)).toEqual({ ok: false, reason: 'the URL must be https' });
    expect(checkEndpointUrl('http://127.0.0.1:8080/x', true).ok).toBe(true);
    expect(checkEndpointUrl('https://user:pw@hooks.example.com/x', false).ok).toBe(false);
    expect(checkEndpointUrl('https://[::1]/x', false)).toEqual({ ok: false, reason: 'the address is not public' });
    expect(checkEndpointUrl('ftp://hooks.example.com', true).ok).toBe(false);
  });
});

describe('delivery schedule', () => {
  it('retries on the Standard Webhooks schedule with at most 20 % jitter, then gives up', () => {
    expect(afterAttempt(1, 204, at, 0.5)).toEqual({ kind: 'succeeded' });
    RETRY_SCHEDULE_MS.forEach((delay, index) => {
      const low = afterAttempt(index + 1, 500, at, 0);
      const high = afterAttempt(index + 1, null, at, 0.999999);
      if (low.kind !== 'retry' || high.kind !== 'retry') throw new Error('expected a retry');
      expect(low.at.getTime() - at.getTime()).toBe(Math.round(delay * 0.8));
      expect(high.at.getTime() - at.getTime()).toBeLessThanOrEqual(Math.round(delay * 1.2));
    });
    expect(afterAttempt(RETRY_SCHEDULE_MS.length + 1, 500, at, 0.5)).toEqual({ kind: 'exhausted' });
    expect(failingTooLong(new Date(at.getTime() - 5 * 86_400_000), at, 5 * 86_400_000)).toBe(true);
    expect(failingTooLong(null, at, 1)).toBe(false);
  });

  it('tells each budget threshold once, when the charges cross it', () => {
    expect(budgetThresholdsCrossed(0n, 499n, 1000n)).toEqual([]);
    expect(budgetThresholdsCrossed(0n, 500n, 1000n)).toEqual([50]);
    expect(budgetThresholdsCrossed(500n, 799n, 1000n)).toEqual([]);
    expect(budgetThresholdsCrossed(499n, 1000n, 1000n)).toEqual([50, 80, 100]);
    expect(budgetThresholdsCrossed(1000n, 1000n, 1000n)).toEqual([]);
    // Rounded up: 50 % of 3 micro is reached at 2.
    expect(budgetThresholdsCrossed(1n, 2n, 3n)).toEqual([50]);
    expect(budgetThresholdsCrossed(0n, 10n, 0n)).toEqual([]);
  });
});
