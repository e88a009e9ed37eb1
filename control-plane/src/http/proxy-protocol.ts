import { isIPv4, isIPv6, SocketAddress } from 'node:net';

// The PROXY protocol header (HAProxy's proxy-protocol.txt, versions 1 and 2) a load balancer writes before the
// client's bytes, so the server learns the client's address on a connection the balancer opened. Pure: bytes in,
// a verdict out. Read only from peers the operator named (ARK_PROXY_PROTOCOL_FROM, http/proxied-connections.ts):
// from anyone else the header would let a client choose its own address.

/** Version 2 begins with these 12 bytes; version 1 with "PROXY ". */
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from('PROXY ', 'latin1');
/** The longest version 1 line, CRLF included (the specification's bound). */
export const V1_MAX_BYTES = 107;
/**
 * The longest version 2 header taken: the 16 fixed bytes and up to 2 KiB of addresses and TLVs. HAProxy sends 12
 * or 36 bytes of addresses and, unless told otherwise (proxy-v2-options), no TLV; a limit on every read.
 */
export const V2_MAX_BYTES = 16 + 2048;

export interface ProxiedAddress {
  address: string;
  port: number;
  family: 'IPv4' | 'IPv6';
}

export type ProxyHeader =
  /** More bytes are needed to decide. */
  | { kind: 'incomplete' }
  /** Not a header, or a broken one: the connection is closed. */
  | { kind: 'invalid'; reason: string }
  /** A header that carries no client (v2 LOCAL, v1 UNKNOWN, v2 UNSPEC or UNIX): the socket's own address stands. */
  | { kind: 'local'; length: number }
  /** The client's and the destination's addresses; `length` bytes of the input were the header. */
  | { kind: 'proxy'; length: number; source: ProxiedAddress; destination: ProxiedAddress };

const incomplete: ProxyHeader = { kind: 'incomplete' };
const invalid = (reason: string): ProxyHeader => ({ kind: 'invalid', reason });

/** Whether `bytes` begins like `prefix` for as long as both go. */
function agreesWith(bytes: Buffer, prefix: Buffer): boolean {
  const n = Math.min(bytes.length, prefix.length);
  return bytes.subarray(0, n).equals(prefix.subarray(0, n));
}

/** Reads the header at the start of `bytes` (everything the peer sent so far). */
export function parseProxyHeader(bytes: Buffer): ProxyHeader {
  if (bytes.length === 0) return incomplete;
  if (agreesWith(bytes, V2_SIGNATURE)) return bytes.length < 16 ? incomplete : parseV2(bytes);
  if (agreesWith(bytes, V1_PREFIX)) return bytes.length < V1_PREFIX.length ? incomplete : parseV1(bytes);
  return invalid('no PROXY protocol signature');
}

function parseV2(bytes: Buffer): ProxyHeader {
  const versionCommand = bytes[12] as number;
  if (versionCommand >> 4 !== 2) return invalid('unknown PROXY protocol v2 version');
  const command = versionCommand & 0x0f;
  if (command > 1) return invalid('unknown PROXY protocol v2 command');
  const familyTransport = bytes[13] as number;
  const bodyLength = bytes.readUInt16BE(14);
  const length = 16 + bodyLength;
  if (length > V2_MAX_BYTES) return invalid('PROXY protocol v2 header too long');
  if (bytes.length < length) return incomplete;
  // LOCAL: the balancer's own connection (a health check); whatever addresses follow are ignored.
  if (command === 0) return { kind: 'local', length };
  const family = familyTransport >> 4;
  const transport = familyTransport & 0x0f;
  if (family > 3 || transport > 2) return invalid('unknown PROXY protocol v2 address family');
  // UNSPEC, or a UNIX socket: no address to take; the connection stays the balancer's.
  if (family === 0 || family === 3) return { kind: 'local', length };
  if (transport !== 1) return invalid('PROXY protocol v2 transport is not a stream');
  const body = bytes.subarray(16, length);
  if (family === 1) {
    if (body.length < 12) return invalid('PROXY protocol v2 IPv4 addresses truncated');
    return {
      kind: 'proxy',
      length,
      source: { address: ipv4(body.subarray(0, 4)), port: body.readUInt16BE(8), family: 'IPv4' },
      destination: { address: ipv4(body.subarray(4, 8)), port: body.readUInt16BE(10), family: 'IPv4' },
    };
  }
  if (body.length < 36) return invalid('PROXY protocol v2 IPv6 addresses truncated');
  return {
    kind: 'proxy',
    length,
    source: { address: ipv6(body.subarray(0, 16)), port: body.readUInt16BE(32), family: 'IPv6' },
    destination: { address: ipv6(body.subarray(16, 32)), port: body.readUInt16BE(34), family: 'IPv6' },
  };
}

function ipv4(bytes: Buffer): string {
  return Array.from(bytes).join('.');
}

/** The canonical text of 16 address bytes (zeros compressed, as Node reports a socket's own address). */
function ipv6(bytes: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return new SocketAddress({ address: groups.join(':'), family: 'ipv6' }).address;
}

const PORT = /^(0|[1-9]\d{0,4})$/;

function parseV1(bytes: Buffer): ProxyHeader {
  const end = bytes.subarray(0, V1_MAX_BYTES).indexOf('\r\n', 0, 'latin1');
  if (end === -1) return bytes.length >= V1_MAX_BYTES ? invalid('PROXY protocol v1 line too long') : incomplete;
  const line = bytes.subarray(0, end).toString('latin1');
  const length = end + 2;
  const fields = line.split(' ');
  // "PROXY UNKNOWN" (anything may follow it): the balancer could not tell; the socket's address stands.
  if (fields[1] === 'UNKNOWN') return { kind: 'local', length };
  if (fields.length !== 6) return invalid('PROXY protocol v1 line has the wrong number of fields');
  const [, protocol, source, destination, sourcePort, destinationPort] = fields as [string, string, string, string, string, string];
  const family = protocol === 'TCP4' ? 'IPv4' : protocol === 'TCP6' ? 'IPv6' : null;
  if (family === null) return invalid('PROXY protocol v1 protocol is not TCP4, TCP6 or UNKNOWN');
  const valid = family === 'IPv4' ? isIPv4 : isIPv6;
  if (!valid(source) || !valid(destination)) return invalid('PROXY protocol v1 address is not one of its protocol');
  if (!PORT.test(sourcePort) || !PORT.test(destinationPort) || Number(sourcePort) > 65535 || Number(destinationPort) > 65535) {
    return invalid('PROXY protocol v1 port is not a port');
  }
  const canonical = (address: string) => (family === 'IPv6' ? new SocketAddress({ address, family: 'ipv6' }).address : address);
  return {
    kind: 'proxy',
    length,
    source: { address: canonical(source), port: Number(sourcePort), family },
    destination: { address: canonical(destination), port: Number(destinationPort), family },
  };
}
