import { isIPv4, isIPv6 } from 'node:net';

// What the control plane believes about the address a request comes from, behind a load balancer (issue 26). Read
// once by loadConfig; a bad entry stops the server with exit code 2 and a message naming the variable and the entry.

export interface ProxiesConfig {
  /**
   * ARK_PROXY_PROTOCOL_FROM: peers (addresses or CIDRs) whose every connection begins with a PROXY protocol header
   * (v1 or v2); its client address is the connection's from then on (http/proxied-connections.ts). Empty: none.
   */
  proxyProtocolFrom: readonly string[];
  /** ARK_TRUSTED_PROXIES: peers (addresses or CIDRs) whose X-Forwarded-For is believed for request.ip. Empty: none. */
  trustedProxies: readonly string[];
}

type Env = Record<string, string | undefined>;

/**
 * A comma-separated list of IPv4 or IPv6 addresses and CIDRs ("10.0.0.5, 10.1.0.0/16, fd00::/8"), each checked:
 * a typo must stop the server, not quietly trust nobody (or everybody).
 */
export function addressListFrom(name: string, raw: string | undefined, fail: (message: string) => Error): readonly string[] {
  if (raw === undefined || raw.trim() === '') return Object.freeze([]);
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const [address = '', prefix, ...rest] = entry.split('/');
    const bits = isIPv4(address) ? 32 : isIPv6(address) && !address.includes('%') ? 128 : 0;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (bits === 0 || !prefixOk || rest.length > 0) {
      throw fail(
        `${name} must be a comma-separated list of IP addresses or CIDRs (like 10.0.0.5, 10.1.0.0/16, fd00::/8); "${entry}" is not one`,
      );
    }
  }
  return Object.freeze(entries);
}

export function proxiesConfigFrom(env: Env, fail: (message: string) => Error): ProxiesConfig {
  return Object.freeze({
    proxyProtocolFrom: addressListFrom('ARK_PROXY_PROTOCOL_FROM', env.ARK_PROXY_PROTOCOL_FROM, fail),
    trustedProxies: addressListFrom('ARK_TRUSTED_PROXIES', env.ARK_TRUSTED_PROXIES, fail),
  });
}
