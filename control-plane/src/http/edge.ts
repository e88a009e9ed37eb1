import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ERROR_CATALOG, type ErrorCode } from '@ark/shared';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { Config } from '../config/index.js';
import { envelope } from './errors.js';
import { installJsonBodyParser } from './json-body.js';
import { acceptProxiedConnections, type ProxyHeaderRefusal } from './proxied-connections.js';
import { installSecurityHeaders, securityHeaders } from './security-headers.js';

// The edge of the HTTP server: what happens before a request reaches Fastify's routing. Node's parser refuses
// malformed requests (both Content-Length and Transfer-Encoding, two lengths, obs-fold, a bad request line),
// oversized URLs and headers (431) and requests that arrive too slowly (408); each gets the contract's envelope
// here, with a fresh request id, like every other answer. Slow and greedy clients are bounded by time and by
// open connections per address. Behind a load balancer the address is the client's, not the balancer's: from the
// PROXY protocol header of a balancer's connection (http/proxied-connections.ts), or X-Forwarded-For from a trusted
// proxy (request.ip only).

export interface EdgeOptions {
  /** The whole request, headers and body, must arrive within this (Node's requestTimeout). */
  requestTimeoutMs: number;
  /** The request line and headers must arrive within this (Node's headersTimeout). */
  headersTimeoutMs: number;
  /** Open connections one client address may hold; 0 for no bound. */
  maxConnectionsPerAddress: number;
  /** Headers every answer carries (security headers), added to the ones written here. */
  headers: Readonly<Record<string, string>>;
  /** Peers whose connections begin with a PROXY protocol header (ARK_PROXY_PROTOCOL_FROM); none when absent. */
  proxyProtocolFrom?: readonly string[];
  /** Peers whose X-Forwarded-For is believed for request.ip (ARK_TRUSTED_PROXIES); none when absent. */
  trustedProxies?: readonly string[];
  /** Told of each balancer connection closed for a missing, broken or late PROXY header (a metric counts them). */
  onProxyHeaderRefused?: (refusal: ProxyHeaderRefusal) => void;
}

/** How long a balancer has to send a connection's PROXY header: it writes it at once, with its first packet. */
export const PROXY_HEADER_TIMEOUT_MS = 5000;

/** Node checks the two timeouts on this period; never coarser than a second, so a cut lands close to its limit. */
export function connectionsCheckingIntervalMs(options: Pick<EdgeOptions, 'requestTimeoutMs' | 'headersTimeoutMs'>): number {
  return Math.max(50, Math.min(1000, Math.floor(Math.min(options.requestTimeoutMs, options.headersTimeoutMs) / 2)));
}

/**
 * A complete HTTP/1.1 error answer with the envelope, for the places that write to the socket themselves. The
 * connection is closed after it: after a framing error nothing more on it can be trusted.
 */
export function rawErrorAnswer(code: ErrorCode, headers: Readonly<Record<string, string>>): string {
  const spec = ERROR_CATALOG[code];
  const requestId = randomUUID();
  const body = JSON.stringify(envelope(code, spec.message, spec.retryable, requestId));
  const lines = [
    `HTTP/1.1 ${spec.status} ${STATUS_CODES[spec.status] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    `x-request-id: ${requestId}`,
    'cache-control: private, no-store',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'connection: close',
  ];
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/**
 * Writes `answer` and ends the connection. The socket is destroyed a second later at most, so a peer that neither
 * reads nor closes cannot hold it; closing at once would reset a peer still sending before it reads the answer.
 */
function answerAndClose(socket: Socket, answer: string): void {
  socket.end(answer);
  // Socket hygiene below the app (no clock in reach, nothing decided): Node's timer, like its parser's own timeouts.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** Which catalog error a failure of Node's HTTP parser (or its timeouts) is. */
export function clientErrorCode(error: { code?: string }): ErrorCode {
  if (error.code === 'HPE_HEADER_OVERFLOW') return 'HEADERS_TOO_LARGE';
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'REQUEST_TIMEOUT';
  return 'MALFORMED_REQUEST';
}

/** Fastify's clientErrorHandler: the envelope instead of Fastify's own `{error, message, statusCode}`. */
export function clientErrorHandler(
  headers: Readonly<Record<string, string>>,
): (this: { log: FastifyBaseLogger }, error: Error & { code?: string }, socket: Socket) => void {
  return function answerClientError(error, socket) {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const code = clientErrorCode(error);
    this.log.debug({ err: error, code }, 'client error');
    // An answer already under way on this socket cannot be replaced by another one: the connection just ends.
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    answerAndClose(socket, rawErrorAnswer(code, headers));
  };
}

/** The Fastify options that set the timeouts and the client error answers. */
export function edgeServerOptions(
  options: EdgeOptions,
): Pick<FastifyServerOptions, 'requestTimeout' | 'clientErrorHandler' | 'trustProxy'> & { http: ServerOptions } {
  const trusted = options.trustedProxies ?? [];
  return {
    // X-Forwarded-For (and -Host, -Proto) only from the named proxies (Fastify walks the list through proxy-addr from
    // the socket's address back, stopping at the first untrusted hop); never from anyone else, who could choose it.
    trustProxy: trusted.length > 0 ? [...trusted] : false,
    requestTimeout: options.requestTimeoutMs,
    http: {
      requestTimeout: options.requestTimeoutMs,
      headersTimeout: options.headersTimeoutMs,
      connectionsCheckingInterval: connectionsCheckingIntervalMs(options),
    },
    clientErrorHandler: clientErrorHandler(options.headers) as FastifyServerOptions['clientErrorHandler'],
  };
}

/** How each counted connection gives its per-address slot back (once: at close, or when it becomes a channel). */
const addressSlots = new WeakMap<object, () => void>();

/**
 * Gives back the per-address slot of a connection that became an agent channel. Channels are bounded by the
 * gateway's own global budget and by machine identity (one channel per machine), not by source address: a host farm
 * of hundreds of rigs behind one NAT address holds one channel each. Harmless for a connection never counted.
 */
export function releaseAddressSlot(socket: object): void {
  const release = addressSlots.get(socket);
  if (release === undefined) return;
  addressSlots.delete(socket);
  release();
}

/**
 * Bounds the connections one address holds open at once. A browser opens a handful, a CLI one or two; a slowloris
 * opens hundreds. Over the bound the new connection gets 429 UNAVAILABLE and is closed. Agent channels leave the
 * count once upgraded (releaseAddressSlot).
 */
export function boundConnectionsPerAddress(server: Server, options: Pick<EdgeOptions, 'maxConnectionsPerAddress' | 'headers'>): void {
  const max = options.maxConnectionsPerAddress;
  if (max <= 0) return;
  const open = new Map<string, number>();
  // Before Node's own listener: a refused connection is closed before any request on it can be parsed.
  server.prependListener('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined) return; // Already gone.
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      socket.write(rawErrorAnswer('UNAVAILABLE', options.headers));
      socket.destroy();
      return;
    }
    open.set(address, count);
    const release = () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    };
    addressSlots.set(socket, release);
    socket.once('close', () => releaseAddressSlot(socket));
  });
}

/** The edge settings of a configuration. */
export function edgeOptionsFrom(config: Config): EdgeOptions {
  return {
    requestTimeoutMs: config.httpRequestTimeoutMs,
    headersTimeoutMs: config.httpHeadersTimeoutMs,
    maxConnectionsPerAddress: config.httpMaxConnectionsPerAddress,
    headers: securityHeaders(config.publicBaseUrl),
    proxyProtocolFrom: config.proxies.proxyProtocolFrom,
    trustedProxies: config.proxies.trustedProxies,
  };
}

/**
 * What the edge adds to an app built with edgeServerOptions: the PROXY protocol header read from balancers, the
 * connection bound, security headers, the body parser.
 * `onRequest`: the app's own per-request headers, set right after the security headers in the same hook.
 */
export function installEdge(
  app: FastifyInstance,
  options: EdgeOptions,
  onRequest?: (request: FastifyRequest, reply: FastifyReply) => void,
): void {
  boundConnectionsPerAddress(app.server, options);
  // After the bound: it, like Node's parser, then sees a balancer's connection only once its header named the client.
  acceptProxiedConnections(app.server, {
    from: options.proxyProtocolFrom ?? [],
    headerTimeoutMs: PROXY_HEADER_TIMEOUT_MS,
    onRefused: (refusal, detail) => {
      app.log.debug({ ...detail, refusal }, 'connection closed: no valid PROXY protocol header');
      options.onProxyHeaderRefused?.(refusal);
    },
  });
  installSecurityHeaders(app, options.headers, onRequest);
  installJsonBodyParser(app);
}
