// The PROXY protocol header parser over real byte sequences (HAProxy's proxy-protocol.txt): both versions, both
// address families, the headers that carry no client (LOCAL, UNKNOWN), a header split anywhere across TCP chunks,
// and what is not a header at all.
import { describe, expect, it } from 'vitest';
import { parseProxyHeader, V1_MAX_BYTES } from './proxy-protocol.js';

const SIGNATURE = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];
const v2 = (versionCommand: number, familyTransport: number, body: number[]) =>
  Buffer.from([...SIGNATURE, versionCommand, familyTransport, body.length >> 8, body.length & 0xff, ...body]);
// What HAProxy's send-proxy-v2 writes for 203.0.113.7:51234 -> 198.51.100.1:8080.
const V2_TCP4 = v2(0x21, 0x11, [203, 0, 113, 7, 198, 51, 100, 1, 0xc8, 0x22, 0x1f, 0x90]);
const V2_TCP6 = v2(0x21, 0x21, [
  ...[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x07],
  ...[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01],
  0x01,
  0xbb,
  0x1f,
  0x90,
]);
const REQUEST = Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n');

describe('parseProxyHeader', () => {
  it('reads a v2 PROXY TCP4 header and says where the request begins', () => {
    const bytes = Buffer.concat([V2_TCP4, REQUEST]);
    expect(parseProxyHeader(bytes)).toEqual({
      kind: 'proxy',
      length: 28,
      source: { address: '203.0.113.7', port: 51234, family: 'IPv4' },
      destination: { address: '198.51.100.1', port: 8080, family: 'IPv4' },
    });
    expect(bytes.subarray(28).equals(REQUEST)).toBe(true);
  });

  it('reads a v2 TCP6 header, addresses in their canonical text', () => {
    expect(parseProxyHeader(V2_TCP6)).toEqual({
      kind: 'proxy',
      length: 52,
      source: { address: '2001:db8::7', port: 443, family: 'IPv6' },
      destination: { address: '2001:db8::1', port: 8080, family: 'IPv6' },
    });
  });

  it('skips the TLVs after the addresses', () => {
    const tlv = [0x04, 0x00, 0x03, 0x61, 0x62, 0x63]; // PP2_TYPE_NOOP, 3 bytes
    const header = v2(0x21, 0x11, [203, 0, 113, 7, 10, 0, 0, 1, 0, 80, 0, 81, ...tlv]);
    expect(parseProxyHeader(header)).toMatchObject({ kind: 'proxy', length: 34, source: { address: '203.0.113.7', port: 80 } });
  });

  it('keeps the socket address for a v2 LOCAL (a health check), UNSPEC or UNIX header', () => {
    expect(parseProxyHeader(v2(0x20, 0x00, []))).toEqual({ kind: 'local', length: 16 });
    // LOCAL with addresses: they are ignored.
    expect(parseProxyHeader(v2(0x20, 0x11, [127, 0, 0, 1, 127, 0, 0, 1, 0, 1, 0, 2]))).toEqual({ kind: 'local', length: 28 });
    expect(parseProxyHeader(v2(0x21, 0x00, []))).toEqual({ kind: 'local', length: 16 });
    expect(parseProxyHeader(v2(0x21, 0x31, new Array(216).fill(0)))).toEqual({ kind: 'local', length: 232 });
  });

  it('reads v1 TCP4 and TCP6 lines, and UNKNOWN as the socket address', () => {
    expect(parseProxyHeader(Buffer.from('PROXY TCP4 203.0.113.8 198.51.100.1 40000 8080\r\nGET'))).toEqual({
      kind: 'proxy',
      length: 48,
      source: { address: '203.0.113.8', port: 40000, family: 'IPv4' },
      destination: { address: '198.51.100.1', port: 8080, family: 'IPv4' },
    });
    expect(parseProxyHeader(Buffer.from('PROXY TCP6 2001:0db8:0:0::9 ::1 65535 0\r\n'))).toMatchObject({
      kind: 'proxy',
      source: { address: '2001:db8::9', port: 65535, family: 'IPv6' },
      destination: { address: '::1', port: 0 },
    });
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n'))).toEqual({ kind: 'local', length: 15 });
    expect(parseProxyHeader(Buffer.from('PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n'))).toEqual({ kind: 'local', length: 35 });
  });

  it('asks for more bytes at every split of a header across chunks, and gives the same answer once whole', () => {
    for (const header of [V2_TCP4, V2_TCP6, Buffer.from('PROXY TCP4 203.0.113.8 198.51.100.1 40000 8080\r\n')]) {
      for (let cut = 0; cut < header.length; cut++) {
        expect(parseProxyHeader(header.subarray(0, cut))).toEqual({ kind: 'incomplete' });
      }
      expect(parseProxyHeader(Buffer.concat([header, REQUEST]))).toMatchObject({ length: header.length });
    }
  });

  it.each([
    ['an HTTP request', REQUEST],
    ['a TLS hello', Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00])],
    ['a v2 signature gone wrong', Buffer.from([...SIGNATURE.slice(0, 11), 0x0b, 0x21, 0x11, 0, 0])],
    ['v2 version 3', v2(0x31, 0x11, [203, 0, 113, 7, 10, 0, 0, 1, 0, 80, 0, 81])],
    ['a v2 command past PROXY', v2(0x22, 0x11, [203, 0, 113, 7, 10, 0, 0, 1, 0, 80, 0, 81])],
    ['a v2 unknown family', v2(0x21, 0x41, [])],
    ['a v2 datagram', v2(0x21, 0x12, [203, 0, 113, 7, 10, 0, 0, 1, 0, 80, 0, 81])],
    ['v2 IPv4 addresses cut short', v2(0x21, 0x11, [203, 0, 113, 7, 10, 0, 0, 1])],
    ['v2 IPv6 addresses cut short', v2(0x21, 0x21, new Array(20).fill(1))],
    ['a v2 header longer than the bound', Buffer.from([...SIGNATURE, 0x21, 0x11, 0xff, 0xff])],
    ['a v1 line without its CRLF within 107 bytes', Buffer.from(`PROXY TCP4 ${'1'.repeat(V1_MAX_BYTES)}`)],
    ['a v1 line ending in LF only', Buffer.from('PROXY TCP4 203.0.113.8 198.51.100.1 40000 8080\nGET / HTTP/1.1\r\n')],
    ['a v1 UDP4 line', Buffer.from('PROXY UDP4 203.0.113.8 198.51.100.1 40000 8080\r\n')],
    ['a v1 IPv6 address in TCP4', Buffer.from('PROXY TCP4 ::1 198.51.100.1 40000 8080\r\n')],
    ['a v1 bad address', Buffer.from('PROXY TCP4 203.0.113.256 198.51.100.1 40000 8080\r\n')],
    ['a v1 port past 65535', Buffer.from('PROXY TCP4 203.0.113.8 198.51.100.1 65536 8080\r\n')],
    ['a v1 port with a leading zero', Buffer.from('PROXY TCP4 203.0.113.8 198.51.100.1 040000 8080\r\n')],
    ['a v1 line with a field missing', Buffer.from('PROXY TCP4 203.0.113.8 198.51.100.1 40000\r\n')],
    ['a v1 line with two spaces', Buffer.from('PROXY TCP4  203.0.113.8 198.51.100.1 40000 8080\r\n')],
    ['lowercase proxy', Buffer.from('proxy TCP4 203.0.113.8 198.51.100.1 40000 8080\r\n')],
  ])('refuses %s', (_what, bytes) => {
    expect(parseProxyHeader(bytes)).toMatchObject({ kind: 'invalid' });
  });
});
