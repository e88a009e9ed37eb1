// ARK_PROXY_PROTOCOL_FROM and ARK_TRUSTED_PROXIES (issue 26): empty by default (today's behaviour: the socket's
// address is the client's), lists of addresses and CIDRs of both families, and a refusal naming the bad entry.
import { describe, expect, it } from 'vitest';
import { ConfigError } from './index.js';
import { proxiesConfigFrom } from './proxies.js';

const read = (env: Record<string, string>) => proxiesConfigFrom(env, (message) => new ConfigError(message));

describe('proxies configuration', () => {
  it('defaults to trusting no proxy', () => {
    expect(read({})).toEqual({ proxyProtocolFrom: [], trustedProxies: [] });
    expect(read({ ARK_PROXY_PROTOCOL_FROM: ' ', ARK_TRUSTED_PROXIES: '' })).toEqual({ proxyProtocolFrom: [], trustedProxies: [] });
  });

  it('reads addresses and CIDRs of both families, spaces around commas allowed', () => {
    expect(
      read({ ARK_PROXY_PROTOCOL_FROM: '198.51.100.5, 198.51.0.0/16,2001:db8::/32 ,::1', ARK_TRUSTED_PROXIES: '192.0.2.1/32' }),
    ).toEqual({
      proxyProtocolFrom: ['198.51.100.5', '198.51.0.0/16', '2001:db8::/32', '::1'],
      trustedProxies: ['192.0.2.1/32'],
    });
  });

  it.each([
    [{ ARK_PROXY_PROTOCOL_FROM: 'haproxy' }, /ARK_PROXY_PROTOCOL_FROM .*"haproxy" is not one/],
    [{ ARK_PROXY_PROTOCOL_FROM: '198.51.100.0/33' }, /"198.51.100.0\/33" is not one/],
    [{ ARK_PROXY_PROTOCOL_FROM: '198.51.100.1,,198.51.100.2' }, /"" is not one/],
    [{ ARK_PROXY_PROTOCOL_FROM: '256.0.0.1' }, /"256.0.0.1" is not one/],
    [{ ARK_TRUSTED_PROXIES: '2001:db8::/129' }, /ARK_TRUSTED_PROXIES .*"2001:db8::\/129"/],
    [{ ARK_TRUSTED_PROXIES: '198.51.100.0/24/8' }, /"198.51.100.0\/24\/8" is not one/],
    [{ ARK_TRUSTED_PROXIES: 'fe80::1%eth0' }, /"fe80::1%eth0" is not one/],
    [{ ARK_TRUSTED_PROXIES: '198.51.100.0/x' }, /"198.51.100.0\/x" is not one/],
  ])('refuses %o', (env, message) => {
    expect(() => read(env as Record<string, string>)).toThrow(ConfigError);
    expect(() => read(env as Record<string, string>)).toThrow(message);
  });
});
