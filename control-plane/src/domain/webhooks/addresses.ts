import { BlockList, isIP } from 'node:net';

// Where a webhook may be sent: never to this host, the operator's private networks or link-local services (cloud
// metadata), unless the operator allows it (ARK_WEBHOOK_ALLOW_PRIVATE, for tests and closed deployments).

const refused = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  refused.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['2001:db8::', 32],
] as const) {
  refused.addSubnet(network, prefix, 'ipv6');
}

/** True when `address` (an IP literal) is loopback, private, link-local, unspecified, multicast or reserved. */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 6) {
    // An IPv4-mapped address is judged as the IPv4 address it carries.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return refused.check(mapped[1], 'ipv4');
    return refused.check(address, 'ipv6');
  }
  return refused.check(address, 'ipv4');
}

export type EndpointUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** The URL's own form: http(s), no credentials, https unless private endpoints are allowed. Addresses are checked on resolution. */
export function checkEndpointUrl(raw: string, allowPrivate: boolean): EndpointUrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'not a URL' };
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) return { ok: false, reason: 'the URL must be https' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'the URL must not carry credentials' };
  if (url.hash !== '') return { ok: false, reason: 'the URL must not carry a fragment' };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && isIP(host) !== 0 && isNonPublicAddress(host)) return { ok: false, reason: 'the address is not public' };
  return { ok: true, url };
}
