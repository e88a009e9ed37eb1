import type { Server } from 'node:http';
import { BlockList, isIPv4, type Socket } from 'node:net';
import { type ProxyHeader, parseProxyHeader } from './proxy-protocol.js';

// Connections a load balancer opens for its clients (ARK_PROXY_PROTOCOL_FROM). Such a connection must begin with a
// PROXY protocol header (http/proxy-protocol.ts); the client address it carries becomes the socket's own before
// any other part of the server sees the socket, so the per-address bound (http/edge.ts), request.ip, the rate
// limits keyed by it and the request log all see the client, not the balancer. Connections from every other peer
// are handed on untouched: nothing they send is read as a header, or a client could choose its own address.

/** Why a trusted peer's connection was closed before any request: counted (ark_http_proxy_header_refusals_total). */
export type ProxyHeaderRefusal = 'invalid' | 'timeout' | 'closed';

export interface ProxiedConnectionsOptions {
  /** Addresses and CIDRs (config/proxies.ts checked them) whose connections begin with the header. */
  from: readonly string[];
  /** How long such a peer has to send the whole header; a balancer writes it with its first packet. */
  headerTimeoutMs: number;
  /** Told of each connection closed for its header; `reason` says more than the refusal (for a debug line). */
  onRefused?: (refusal: ProxyHeaderRefusal, detail: { peer: string | undefined; reason: string }) => void;
}

/** A matcher of peer addresses over `entries` ("10.0.0.5", "10.0.0.0/8", "fd00::/8"); IPv4-mapped IPv6 matches IPv4. */
export function peerMatcher(entries: readonly string[]): (address: string | undefined) => boolean {
  if (entries.length === 0) return () => false;
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/') as [string, string | undefined];
    const family = isIPv4(address) ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return (address) => address !== undefined && list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
}

/**
 * Reads the header from the start of `socket`, then calls `done` with it; bytes past the header are put back
 * (`unshift`) for whoever reads next. Never calls `done` twice; the socket is left paused, its listeners as found.
 */
export function readProxyHeader(
  socket: Socket,
  timeoutMs: number,
  done: (header: ProxyHeader | { kind: 'timeout' | 'closed' }) => void,
): void {
  let buffered: Buffer = Buffer.alloc(0);
  let finished = false;
  const finish = (result: ProxyHeader | { kind: 'timeout' | 'closed' }) => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    socket.removeListener('readable', onReadable);
    socket.removeListener('end', onClosed);
    socket.removeListener('close', onClosed);
    socket.removeListener('error', onClosed);
    done(result);
  };
  const onReadable = () => {
    for (let chunk = socket.read() as Buffer | null; chunk !== null; chunk = socket.read() as Buffer | null) {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const header = parseProxyHeader(buffered);
      if (header.kind === 'incomplete') continue;
      if (header.kind !== 'invalid' && buffered.length > header.length) socket.unshift(buffered.subarray(header.length));
      return finish(header);
    }
  };
  const onClosed = () => finish({ kind: 'closed' });
  // Socket hygiene below the app, like edge.ts's answerAndClose: Node's timer, no decision in it.
  const timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs);
  timer.unref();
  socket.on('readable', onReadable);
  socket.once('end', onClosed);
  socket.once('close', onClosed);
  socket.once('error', onClosed);
}

/** Makes `socket` report the client the header named, as Node's own getters would for a direct connection. */
function adoptClientAddress(socket: Socket, header: ProxyHeader & { kind: 'proxy' }): void {
  Object.defineProperty(socket, 'remoteAddress', { value: header.source.address, configurable: true });
  Object.defineProperty(socket, 'remotePort', { value: header.source.port, configurable: true });
  Object.defineProperty(socket, 'remoteFamily', { value: header.source.family, configurable: true });
}

/**
 * Puts the header read in front of every 'connection' listener `server` has now (Node's HTTP parser, the
 * per-address bound): from a peer in `from`, they get the socket once its header is read, with the client's
 * address; a connection without a good header in time is closed without an answer (its peer is the balancer, not
 * an HTTP client). Install it after every other 'connection' listener.
 */
export function acceptProxiedConnections(server: Server, options: ProxiedConnectionsOptions): void {
  if (options.from.length === 0) return;
  const fromBalancer = peerMatcher(options.from);
  const listeners = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  const handOn = (socket: Socket) => {
    for (const listener of listeners) listener.call(server, socket);
  };
  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress;
    if (!fromBalancer(peer)) return handOn(socket);
    readProxyHeader(socket, options.headerTimeoutMs, (header) => {
      if (header.kind === 'proxy' || header.kind === 'local') {
        if (socket.destroyed) return;
        if (header.kind === 'proxy') adoptClientAddress(socket, header);
        return handOn(socket);
      }
      const refusal: ProxyHeaderRefusal = header.kind === 'timeout' || header.kind === 'closed' ? header.kind : 'invalid';
      options.onRefused?.(refusal, { peer, reason: header.kind === 'invalid' ? header.reason : refusal });
      socket.destroy();
    });
  });
}
