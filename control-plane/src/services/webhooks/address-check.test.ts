// The addresses a webhook endpoint may be reached at (issue 22): a name that resolves to a transition form of a
// private address, or to a documentation range, is refused like the literal; the check runs at registration and at
// every attempt through this one function.
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors.js';
import { allowedAddresses } from './address-check.js';

const resolvingTo = (addresses: string[]) => async () => addresses;

async function refusal(url: string, addresses: string[] = []): Promise<string> {
  try {
    await allowedAddresses(url, false, resolvingTo(addresses));
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
  return 'allowed';
}

describe('webhook endpoint addresses', () => {
  it('refuses a literal or a resolved address in ::/96, 2002::/16, 64:ff9b:1::/48, NAT64 of a private one, or documentation', async () => {
    for (const url of [
      'https://[::127.0.0.1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://[2002:7f00:1::1]/hook',
      'https://[64:ff9b:1::a00:1]/hook',
      'https://[64:ff9b::127.0.0.1]/hook',
      'https://[2001:db8::1]/hook',
      'https://[3fff::1]/hook',
      'https://192.0.2.10/hook',
      'https://198.51.100.10/hook',
      'https://203.0.113.10/hook',
    ])
      expect(await refusal(url), url).toBe('WEBHOOK_URL_REFUSED');
    for (const resolved of [
      ['::7f00:1'],
      ['2002:a00:1::1'],
      ['64:ff9b:1::1'],
      ['64:ff9b::a9fe:a9fe'],
      ['3fff::1'],
      ['93.184.215.14', '203.0.113.1'],
    ])
      expect(await refusal('https://hooks.example.com/hook', resolved), resolved.join()).toBe('WEBHOOK_URL_REFUSED');
  });

  it('keeps public addresses, a NAT64 address of a public IPv4 one included', async () => {
    expect(await allowedAddresses('https://[64:ff9b::5db8:d70e]/hook', false, resolvingTo([]))).toEqual(['64:ff9b::5db8:d70e']);
    expect(await allowedAddresses('https://hooks.example.com/hook', false, resolvingTo(['93.184.215.14', '2606:4700::1']))).toEqual([
      '93.184.215.14',
      '2606:4700::1',
    ]);
  });
});
