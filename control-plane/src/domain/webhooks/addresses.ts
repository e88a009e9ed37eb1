import { BlockList, isIP } from 'node:net';

// Where a webhook may be sent: never to this host, the operator's private networks or link-local services (cloud
// metadata), unless the operator allows it (ARK_WEBHOOK_ALLOW_PRIVATE, for tests and closed deployments).

// The ranges are IANA's special-purpose registries (RFC 6890 and later): what is not globally reachable, or is
// reserved for documentation, benchmarks and transition mechanisms that could carry a packet somewhere private.
const refused = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  // Documentation (RFC 5737): never a real receiver.
  ['192.0.2.0', 24],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  // The 6to4 relay anycast (deprecated, RFC 7526).
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  refused.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // IPv4-compatible (deprecated, RFC 4291): `[::127.0.0.1]` is loopback on stacks that still route it. Covers :: and ::1.
  ['::', 96],
  // Local-use NAT64 (RFC 8215): the operator's own translator, to whatever IPv4 it is set up for.
  ['64:ff9b:1::', 48],
  // Discard-only (RFC 6666).
  ['100::', 64],
  // IETF protocol assignments (Teredo, benchmarking, ORCHID, ...): tunnels and infrastructure, never a receiver.
  ['2001::', 23],
  // Documentation (RFC 3849, RFC 9637).
  ['2001:db8::', 32],
  ['3fff::', 20],
  // 6to4 (RFC 3056): the next 32 bits name any IPv4 address, private ones included, behind a relay.
  ['2002::', 16],
  // SRv6 segment identifiers (RFC 9602).
  ['5f00::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  // Site-local (deprecated, RFC 3879).
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  refused.addSubnet(network, prefix, 'ipv6');
}

/** The NAT64 well-known prefix (RFC 6052): the address is the IPv4 address in its last 32 bits, judged as that. */
const nat64 = new BlockList();
nat64.addSubnet('64:ff9b::', 96, 'ipv6');

/**
 * True when `address` (an IP literal) is loopback, private, link-local, unspecified, multicast, reserved, for
 * documentation, or a transition form that may reach any of those. IPv4-mapped (`::ffff:a.b.c.d`, which the
 * BlockList matches against its IPv4 rules) and NAT64 well-known addresses are judged by the IPv4 address they carry.
 */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return refused.check(address, 'ipv4');
  if (nat64.check(address, 'ipv6')) {
    const embedded = lastIpv4Of(address);
    return embedded === null || refused.check(embedded, 'ipv4');
  }
  return refused.check(address, 'ipv6');
}

/** The IPv4 address in the last 32 bits of an IPv6 literal (isIP said it is one), or null when it cannot be read. */
function lastIpv4Of(address: string): string | null {
  const text = address.toLowerCase().replace(/%.*$/, '');
  // A dotted tail is the IPv4 address itself.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) return dotted[1];
  const [head = '', tail] = text.split('::');
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const words =
    tail === undefined
      ? groups(head)
      : [...groups(head), ...Array(8 - groups(head).length - groups(tail).length).fill('0'), ...groups(tail)];
  if (words.length !== 8) return null;
  const high = Number.parseInt(words[6] ?? '', 16);
  const low = Number.parseInt(words[7] ?? '', 16);
  if (Number.isNaN(high) || Number.isNaN(low)) return null;
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
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
