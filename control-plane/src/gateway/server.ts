import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { CHANNEL_MAX_FRAME_BYTES, CHANNEL_PATH, CHANNEL_PROTOCOL_VERSION, ERROR_CATALOG } from '@ark/shared';
import type { Registry } from 'prom-client';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Clock, ClockTimer } from '../clock.js';
import type { PostgresConnector, Store } from '../store/db.js';
import { GroupApplier } from './applier.js';
import { OutboxWatch } from './delivery.js';
import { LogTunnel } from '../logs/tunnel.js';
import { RelayTunnel } from '../relay/tunnel.js';
import { CLOSE_CODES, Session, type SessionContext } from './session.js';
import type { ChannelHandlers, MachineDirectory } from './handlers.js';
import type { ControlPlaneIdentity } from './identity.js';
import type { GatewayLogger } from './logger.js';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.js';
import { releaseAddressSlot } from '../http/edge.js';

/** Tunables, each with a default that suits production. Every timeout runs on the injected clock. */
export interface GatewaySettings {
  /** Announced in welcome; the idle timeout is three of these by default. */
  heartbeatIntervalS?: number;
  telemetryIntervalS?: number;
  /** A connection must complete the hello within this. */
  handshakeTimeoutMs?: number;
  /** No frame for this long closes the connection. */
  idleTimeoutMs?: number;
  /** Upgrades beyond this are answered 503. */
  maxConnections?: number;
  /** A socket whose unsent output exceeds this is a slow consumer and is closed. */
  sendBufferLimitBytes?: number;
  /** Frames received but not yet handled, per connection; more closes it (agents send a bounded window). */
  inboxLimitFrames?: number;
  /** Commands read from the outbox per query. */
  deliveryBatch?: number;
  /** The polling fallback's period (in-process and NOTIFY wake-ups make it a safety net). */
  pollIntervalMs?: number;
  /**
   * How long the applier waits to gather a group of reliable messages while it is busy (applier.ts): fewer commits
   * under load for a few milliseconds more per message. Default 20 ms on SQLite (an fsync each), 10 on Postgres.
   */
  groupLingerMs?: number;
  /**
   * The whole HTTP answer written to a refused upgrade (the API's envelope, request id and security headers, built by
   * the composition root from http/edge.ts); the default is a bare envelope.
   */
  refusalAnswer?: (code: UpgradeRefusal) => string;
}

/** Why an upgrade is refused before it becomes a channel. */
export type UpgradeRefusal = 'NOT_FOUND' | 'CHANNEL_VERSION_UNSUPPORTED' | 'SERVICE_UNAVAILABLE';

export interface ChannelGatewayOptions extends GatewaySettings {
  store: Store;
  handlers: ChannelHandlers;
  directory: MachineDirectory;
  /** Loaded once at start (the key is shared by replicas through the store). */
  identity: () => Promise<ControlPlaneIdentity>;
  clock: Clock;
  logger: GatewayLogger;
  registry?: Registry;
  /**
   * Opens the LISTEN connection that NOTIFY from other replicas arrives on (PostgreSQL; built by runtime.ts); null:
   * in-process wake-ups and the poll only (SQLite).
   */
  listenConnector: PostgresConnector | null;
}

export { CLOSE_CODES };

/**
 * The agent gateway: the WebSocket end of the agent channel (DESIGN.md "The agent channel"). It answers upgrades
 * on CHANNEL_PATH, runs the challenge handshake, checks every frame (size, signature, version, schema, session id,
 * sequence) before anything is processed, applies reliable messages once, and delivers the outbox.
 */
export class ChannelGateway {
  readonly settings: Required<GatewaySettings>;
  readonly #options: ChannelGatewayOptions;
  readonly #metrics: GatewayMetrics;
  readonly #wss: WebSocketServer;
  /** Every live connection, for the timeout sweep and shutdown. */
  readonly #all = new Set<Session>();
  /** Connections past the handshake, by machine: the newest wins. */
  readonly #byMachine = new Map<string, Session>();
  /** What each session is given; built once the identity is loaded (no session is accepted before). */
  #sessionContext: SessionContext | null = null;
  #starting: Promise<void> | null = null;
  #watch: OutboxWatch | null = null;
  #sweepTimer: ClockTimer | null = null;
  #closing = false;
  /** Applies reliable messages of every connection here, with group commit. */
  readonly applier: GroupApplier;
  /** The OpenAI-compatible relay's streams over the connections held here (relay/tunnel.ts). */
  readonly relay = new RelayTunnel((machineId, body) => this.#byMachine.get(machineId)?.sendRelay(body) ?? false);
  /** Job-log streams over the connections held here (logs/tunnel.ts; issue 25 item 2). */
  readonly logs = new LogTunnel((machineId, body) => this.#byMachine.get(machineId)?.sendRelay(body) ?? false);

  constructor(options: ChannelGatewayOptions) {
    this.#options = options;
    const heartbeatIntervalS = options.heartbeatIntervalS ?? 15;
    this.settings = {
      heartbeatIntervalS,
      telemetryIntervalS: options.telemetryIntervalS ?? 60,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? 10_000,
      idleTimeoutMs: options.idleTimeoutMs ?? heartbeatIntervalS * 3 * 1000,
      maxConnections: options.maxConnections ?? 20_000,
      sendBufferLimitBytes: options.sendBufferLimitBytes ?? 1024 * 1024,
      inboxLimitFrames: options.inboxLimitFrames ?? 256,
      deliveryBatch: options.deliveryBatch ?? 100,
      pollIntervalMs: options.pollIntervalMs ?? (options.listenConnector ? 5_000 : 2_000),
      refusalAnswer: options.refusalAnswer ?? bareRefusal,
      groupLingerMs: options.groupLingerMs ?? (options.store.dialect === 'postgres' ? 10 : 20),
    };
    this.#metrics = createGatewayMetrics(options.registry);
    this.applier = new GroupApplier({
      store: options.store,
      handlers: options.handlers,
      clock: options.clock,
      lingerMs: this.settings.groupLingerMs,
      onGroup: (queue, size) => this.#metrics.applyGroups.observe({ queue }, size),
    });
    // No deflate (CPU and per-socket memory), frames bounded by the protocol, our own connection bookkeeping.
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: CHANNEL_MAX_FRAME_BYTES,
      perMessageDeflate: false,
      clientTracking: false,
    });
  }

  /** Loads the identity and starts the outbox watch and the timeout sweep; idempotent. */
  start(): Promise<void> {
    this.#starting ??= (async () => {
      this.#sessionContext = this.#buildSessionContext(await this.#options.identity());
      if (this.#closing) return;
      const sweepMs = Math.max(
        50,
        Math.min(1_000, Math.floor(Math.min(this.settings.handshakeTimeoutMs, this.settings.idleTimeoutMs) / 4)),
      );
      this.#sweepTimer = this.#options.clock.setInterval(() => this.#sweep(), sweepMs);
      this.#sweepTimer.unref();
      this.#watch = new OutboxWatch({
        store: this.#options.store,
        clock: this.#options.clock,
        listenConnector: this.#options.listenConnector,
        pollIntervalMs: this.settings.pollIntervalMs,
        logger: this.#options.logger,
        wake: (machineId) => this.#byMachine.get(machineId)?.deliver(),
        pending: (machineId, maxSeq) => {
          const session = this.#byMachine.get(machineId);
          if (session && maxSeq > session.commandsSentUpto) session.deliver();
        },
        holdsSockets: () => this.#byMachine.size > 0,
      });
      await this.#watch.start();
    })();
    return this.#starting;
  }

  /** Routes the HTTP server's upgrades on CHANNEL_PATH here; other paths are left to other listeners. */
  attach(server: Server): void {
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (!this.handleUpgrade(request, socket, head) && server.listenerCount('upgrade') === 1) {
        this.#refuseUpgrade(socket, 'NOT_FOUND');
      }
    });
  }

  /** Returns false when the request is not for the channel path. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(request.url ?? '/', 'http://gateway.invalid');
    if (url.pathname !== CHANNEL_PATH) return false;
    socket.on('error', () => {});
    const version = url.searchParams.get('v');
    if (version !== String(CHANNEL_PROTOCOL_VERSION)) {
      this.#refused('unknown_version_url', { version, address: request.socket.remoteAddress });
      this.#refuseUpgrade(socket, 'CHANNEL_VERSION_UNSUPPORTED');
      return true;
    }
    if (this.#closing) {
      this.#refuseUpgrade(socket, 'SERVICE_UNAVAILABLE');
      return true;
    }
    if (this.#all.size >= this.settings.maxConnections) {
      this.#refused('capacity', { connections: this.#all.size });
      this.#refuseUpgrade(socket, 'SERVICE_UNAVAILABLE');
      return true;
    }
    // From here the connection counts against this budget, not against its address's (http/edge.ts).
    releaseAddressSlot(request.socket);
    this.start().then(
      () => {
        if (this.#closing) return void this.#refuseUpgrade(socket, 'SERVICE_UNAVAILABLE');
        // `mac=1`: the agent asks for per-connection MAC keys (shared/src/channel/session-mac.ts); any other value or
        // none gets signatures only, as agents before it expect.
        const wantsMac = url.searchParams.get('mac') === '1';
        this.#wss.handleUpgrade(request, socket, head, (ws) => this.#accept(ws, wantsMac));
      },
      (error: unknown) => {
        this.#options.logger.error({ err: error }, 'agent gateway could not start');
        this.#refuseUpgrade(socket, 'SERVICE_UNAVAILABLE');
      },
    );
    return true;
  }

  #refuseUpgrade(socket: Duplex, code: UpgradeRefusal): void {
    socket.end(this.settings.refusalAnswer(code));
  }

  /** Connections past the handshake on this replica. */
  get connectedCount(): number {
    return this.#byMachine.size;
  }

  isConnected(machineId: string): boolean {
    return this.#byMachine.has(machineId);
  }

  /** Closes every connection (agents reconnect elsewhere) and stops the watch; waits for handlers in flight. */
  async close(): Promise<void> {
    this.#closing = true;
    const clock = this.#options.clock;
    clock.clearInterval(this.#sweepTimer);
    await this.#starting?.catch(() => {});
    await this.#watch?.close();
    const sessions = [...this.#all];
    for (const session of sessions) session.close(CLOSE_CODES.goingAway, 'shutting_down', false);
    // Handlers in flight get 5 s to finish; the wait's timer is dropped as soon as they do.
    const settledOrLate = new AbortController();
    await Promise.race([Promise.allSettled(sessions.map((s) => s.settled())), clock.sleep(5_000, settledOrLate.signal)]);
    settledOrLate.abort();
    for (const session of sessions) session.terminate();
    await this.applier.idle();
  }

  // ---- the sessions' narrow view of the gateway ----

  #buildSessionContext(identity: ControlPlaneIdentity): SessionContext {
    const options = this.#options;
    return {
      settings: this.settings,
      clock: options.clock,
      logger: options.logger,
      metrics: this.#metrics,
      db: options.store.db,
      handlers: options.handlers,
      applier: this.applier,
      relay: this.relay,
      logs: this.logs,
      sign: identity.sign,
      publicKeyOf: (machineId) => options.directory.publicKeyOf(machineId),
      register: (session, machineId) => this.#register(session, machineId),
      forget: (session) => this.#forget(session),
    };
  }

  #register(session: Session, machineId: string): void {
    const previous = this.#byMachine.get(machineId);
    this.#byMachine.set(machineId, session);
    this.#metrics.connections.set(this.#byMachine.size);
    if (previous && previous !== session) {
      previous.close(CLOSE_CODES.replaced, 'replaced', true);
      this.relay.machineGone(machineId);
      this.logs.machineGone(machineId);
    }
  }

  #forget(session: Session): boolean {
    this.#all.delete(session);
    const machineId = session.machineId;
    if (machineId && this.#byMachine.get(machineId) === session) {
      this.#byMachine.delete(machineId);
      this.#metrics.connections.set(this.#byMachine.size);
      this.relay.machineGone(machineId);
      this.logs.machineGone(machineId);
      return true;
    }
    return false;
  }

  #accept(ws: WebSocket, wantsMac: boolean): void {
    const session = new Session(this.#sessionContext as SessionContext, ws, wantsMac);
    this.#all.add(session);
    session.begin();
  }

  #refused(reason: string, detail: object): void {
    this.#metrics.closes.inc({ reason });
    this.#options.logger.warn({ reason, ...detail }, 'agent channel upgrade refused');
  }

  #sweep(): void {
    const now = this.#options.clock.monotonicMs();
    for (const session of this.#all) session.checkTimeouts(now);
  }
}

/** The bare refusal: the envelope with a fresh request id, for gateways built without the API's answer. */
function bareRefusal(code: UpgradeRefusal): string {
  const spec = ERROR_CATALOG[code];
  const requestId = randomUUID();
  const body = JSON.stringify({ error: { code, message: spec.message, retryable: spec.retryable, request_id: requestId } });
  const reason = spec.status === 400 ? 'Bad Request' : spec.status === 404 ? 'Not Found' : 'Service Unavailable';
  return `HTTP/1.1 ${spec.status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\ncache-control: private, no-store\r\nConnection: close\r\n\r\n${body}`;
}
