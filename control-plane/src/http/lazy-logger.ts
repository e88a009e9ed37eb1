import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { pino } from 'pino';
import type { RequestEndListener } from './request-end.js';

// Fastify gives every request a child logger carrying its request id. Building a pino child costs a few
// microseconds (its bindings are serialized up front), on every request, even when the request never logs: at the
// usual `warn` level nothing is written for a request that goes well. This child is built only when a line is
// actually written; what it writes is exactly what the pino child would have written.

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Parent = FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
type Args = [unknown, ...unknown[]];

class LazyChildLogger {
  #child: FastifyBaseLogger | null = null;
  constructor(
    private readonly parent: Parent,
    private readonly bindings: Record<string, unknown>,
  ) {}

  /** The real child, made at the first line written (or the first question only it can answer). */
  private real(): FastifyBaseLogger {
    if (this.#child === null) this.#child = this.parent.child(this.bindings);
    return this.#child;
  }

  private write(method: LogMethod, args: Args): void {
    // A level the parent would drop is dropped here without building anything.
    if (this.#child === null && this.parent.isLevelEnabled?.(method) === false) return;
    (this.real()[method] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }
  set level(level: string) {
    this.real().level = level;
  }
  fatal(...args: Args) {
    this.write('fatal', args);
  }
  error(...args: Args) {
    this.write('error', args);
  }
  warn(...args: Args) {
    this.write('warn', args);
  }
  info(...args: Args) {
    this.write('info', args);
  }
  debug(...args: Args) {
    this.write('debug', args);
  }
  trace(...args: Args) {
    this.write('trace', args);
  }
  silent() {}
  child(bindings: Record<string, unknown>, options?: object): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }
  isLevelEnabled(level: string): boolean {
    return this.#child !== null ? ((this.#child as Parent).isLevelEnabled?.(level) ?? true) : (this.parent.isLevelEnabled?.(level) ?? true);
  }
}

/**
 * Fastify's `childLoggerFactory`: a lazy child for the usual case; a route with its own level or serializers gets
 * the pino child at once (it changes what the child decides).
 */
export function lazyChildLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Record<string, unknown>,
  options: { level?: string; serializers?: unknown },
): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options as never);
  return new LazyChildLogger(logger, bindings) as unknown as FastifyBaseLogger;
}

/** The serializers Fastify gives the logger it is handed (fastify/lib/logger-pino.js), for the request lines. */
const requestSerializers = {
  req: (request: FastifyRequest) => ({
    method: request.method,
    url: request.url,
    version: request.headers?.['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket ? request.socket.remotePort : undefined,
  }),
  err: pino.stdSerializers.err,
  res: (reply: { statusCode: number }) => ({ statusCode: reply.statusCode }),
};

/**
 * The app's logger and its request loggers, for a Fastify instance made without a logger. Fastify then skips the
 * per-response listeners it keeps for its "request completed" line (http/request-end.ts says what they cost); the
 * request writes one line, `request completed` from `logCompletion`, with the request (method, URL, addresses), the
 * status and the time taken. The logger is what Fastify would have made of `logger`: a child with its serializers (the
 * logger's own serializers win, as in Fastify).
 */
export function requestLogging(logger: FastifyBaseLogger): {
  logger: FastifyBaseLogger;
  childLoggerFactory: typeof lazyChildLoggerFactory;
  logCompletion: RequestEndListener;
} {
  const own = (logger as unknown as Record<symbol, object | undefined>)[pino.symbols.serializersSym];
  const withSerializers = logger.child({}, { serializers: { ...requestSerializers, ...own } } as never);
  return {
    logger: withSerializers,
    // Fastify hands its own (silent) logger to the factory: each request's logger is a child of this one instead.
    childLoggerFactory: (_silent, bindings, options) => lazyChildLoggerFactory(withSerializers, bindings, options),
    // Fastify's two lines in one: the request, the response's status and the time taken, on the request's logger (its id bound).
    logCompletion: ({ request, statusCode, elapsedMs }) =>
      request.log.info({ req: request, res: { statusCode }, responseTime: elapsedMs }, 'request completed'),
  };
}
