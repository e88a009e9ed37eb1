import { EventEmitter } from 'node:events';
import {
  CHANNEL_MAX_FRAME_BYTES,
  CHANNEL_PROTOCOL_VERSION,
  type Clock,
  type ClockTimer,
  type CommandMessage,
  type FrameMacSigner,
  type FrameMacVerifier,
  type FrameSigner,
  type FrameVerifier,
  openFrame,
  sealFrame,
  type ServerMessage,
  systemClock,
  type WelcomeMessage,
} from '@ark/shared';
import WebSocket from 'ws';
import type { ChannelClientOptions, ChannelState, ChannelStatus, HeartbeatBody } from './client-types.js';
import { PersistentQueue, type ReliableBody } from './queue.js';
import { answerMacOffer } from './mac-offer.js';
import { nodeSigner, pinnedVerifier } from './signer.js';

export type { ReliableBody } from './queue.js';

export type { ChannelClientOptions, ChannelLogger, ChannelState, ChannelStatus, HeartbeatBody } from './client-types.js';

/** A connection that stayed up this long resets the backoff; a flapping one keeps backing off. */
const STABLE_CONNECTION_MS = 60_000;

/**
 * The agent's end of the channel: connects with bounded exponential backoff and jitter, answers the challenge,
 * verifies every control-plane frame under the pinned key and checks its sequence, sends heartbeats (dropped
 * when disconnected) and reliable messages (persisted first, resent after every reconnect until acknowledged),
 * and applies commands once each, in order.
 *
 * Events: 'connected' (welcome), 'disconnected' ({code, reason, retryInMs}), 'ack' (upto), 'command' (command, duplicate).
 */
export class ChannelClient extends EventEmitter {
  readonly #options: ChannelClientOptions;
  readonly #sign: FrameSigner;
  readonly #verify: FrameVerifier;
  readonly #clock: Clock;
  readonly #random: () => number;
  #queue: PersistentQueue | null = null;
  #state: ChannelState = 'idle';
  #ws: WebSocket | null = null;
  #sid: string | null = null;
  /** This connection's MAC keys, once the challenge offered them: check the control plane's MACs, seal ours. */
  #macIn: FrameMacVerifier | null = null;
  #macOut: FrameMacSigner | null = null;
  #recvSeq = 0;
  #sendSeq = 0;
  /** Highest reliable id sent on this connection. */
  #sentUpto = 0;
  #rebasing = false;
  #attempt = 0;
  #retryTimer: ClockTimer | null = null;
  #nextAttemptAt: Date | null = null;
  #watchdog: ClockTimer | null = null;
  #connectStartedAt = 0;
  #readyAt = 0;
  #lastFrameAt = 0;
  #heartbeatIntervalMs = 15_000;
  #heartbeatSentAt: number | null = null;
  #lastHeartbeatAckAt: Date | null = null;
  #connectedSince: Date | null = null;
  #commands: Promise<void> = Promise.resolve();
  #duplicateCommands = 0;
  #reconnects = 0;
  #lastError: string | null = null;

  constructor(options: ChannelClientOptions) {
    super();
    this.#options = options;
    this.#sign = options.signer ?? nodeSigner(options.secretKey);
    this.#verify = pinnedVerifier(options.controlPlanePublicKey);
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
  }

  /** Loads the queue and starts connecting; resolves before the connection is up. */
  async start(): Promise<void> {
    if (this.#state !== 'idle') return;
    this.#queue = await PersistentQueue.open({
      stateDir: this.#options.stateDir,
      maxEntries: this.#options.maxQueueEntries,
      durable: this.#options.durable,
    });
    this.#watchdog = this.#clock.setInterval(() => this.#checkLiveness(), this.#options.watchdogIntervalMs ?? 1_000);
    this.#watchdog.unref();
    this.#connect();
  }

  /** Closes the connection and the queue; what is unacknowledged stays on disk for the next start. */
  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    const wasStarted = this.#state !== 'idle';
    this.#state = 'stopped';
    if (this.#retryTimer) this.#clock.clearTimeout(this.#retryTimer);
    if (this.#watchdog) this.#clock.clearInterval(this.#watchdog);
    const ws = this.#ws;
    this.#ws = null;
    if (ws) {
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      ws.close(1000, 'agent_stopping');
      await Promise.race([closed, this.#delay(2_000)]);
      ws.terminate();
    }
    // A command being applied gets a moment to finish and record itself.
    await Promise.race([this.#commands, this.#delay(5_000)]);
    if (wasStarted) await this.#queue?.close();
  }

  /** Unreliable: sent now if connected, otherwise dropped (the next one follows). */
  sendHeartbeat(body: HeartbeatBody): boolean {
    if (this.#state !== 'ready') return false;
    if (this.#heartbeatSentAt === null) this.#heartbeatSentAt = this.#nowMs();
    return this.#send({ ...body, t: 'heartbeat' });
  }

  /** Reliable: assigns the next id, persists, sends when connected, resends after reconnects until acknowledged. */
  async enqueue(body: ReliableBody): Promise<number> {
    const queue = this.#queue;
    if (!queue || this.#state === 'stopped') throw new Error('the channel is not running');
    const message = await queue.append(body);
    this.#flush();
    return message.id;
  }

  status(): ChannelStatus {
    const queue = this.#queue;
    return {
      state: this.#state,
      connected: this.#state === 'ready',
      sessionId: this.#state === 'ready' ? this.#sid : null,
      frameAuth: this.#state === 'ready' ? (this.#macOut ? 'mac' : 'signature') : null,
      connectedSince: this.#connectedSince?.toISOString() ?? null,
      lastHeartbeatAckAt: this.#lastHeartbeatAckAt?.toISOString() ?? null,
      queued: queue?.size ?? 0,
      nextMessageId: queue?.nextId ?? 1,
      ackedUpto: queue?.ackedUpto ?? 0,
      commandsAppliedUpto: queue?.commandsAppliedUpto ?? 0,
      duplicateCommands: this.#duplicateCommands,
      droppedTelemetry: queue?.droppedTelemetry ?? 0,
      reconnects: this.#reconnects,
      lastError: this.#lastError,
      nextAttemptAt: this.#state === 'backoff' ? (this.#nextAttemptAt?.toISOString() ?? null) : null,
    };
  }

  /** Resolves at the next welcome (at once if connected). */
  connected(): Promise<void> {
    if (this.#state === 'ready') return Promise.resolve();
    return new Promise((resolve) => this.once('connected', () => resolve()));
  }

  // ---- connection ----

  #connect(): void {
    if (this.#state === 'stopped') return;
    this.#state = 'connecting';
    this.#sid = null;
    this.#macIn = null;
    this.#macOut = null;
    this.#recvSeq = 0;
    this.#sendSeq = 0;
    this.#sentUpto = 0;
    this.#heartbeatSentAt = null;
    this.#connectStartedAt = this.#nowMs();
    const url = new URL(this.#options.url);
    if (this.#options.sessionMac ?? true) url.searchParams.set('mac', '1');
    const ws = new WebSocket(url, {
      perMessageDeflate: false,
      maxPayload: CHANNEL_MAX_FRAME_BYTES,
      handshakeTimeout: this.#options.connectTimeoutMs ?? 10_000,
    });
    this.#ws = ws;
    ws.on('open', () => {
      if (this.#ws === ws) this.#state = 'handshaking';
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#receive(ws, data, isBinary));
    ws.on('error', (error: Error) => {
      if (this.#ws === ws) this.#lastError = error.message;
    });
    ws.on('close', (code: number, reason: Buffer) => this.#closed(ws, code, reason.toString()));
  }

  #closed(ws: WebSocket, code: number, reason: string): void {
    if (this.#ws !== ws) return;
    this.#ws = null;
    const wasReady = this.#state === 'ready';
    if (this.#state === 'stopped') return;
    if (wasReady) {
      this.#options.logger.info({ code, reason }, 'channel disconnected');
      if (this.#nowMs() - this.#readyAt >= STABLE_CONNECTION_MS) this.#attempt = 0;
    }
    if (code !== 1000 && reason) this.#lastError = `closed ${code} ${reason}`;
    this.#connectedSince = null;
    const failedAttempt = wasReady ? 0 : this.#attempt + 1;
    const retryInMs = this.#scheduleReconnect();
    // A control plane down for hours must not fill the log: the first few failures, then every tenth.
    if (failedAttempt > 0 && (failedAttempt <= 3 || failedAttempt % 10 === 0)) {
      this.#options.logger.warn({ attempt: failedAttempt, error: this.#lastError, retryInMs }, 'channel connection failed');
    }
    this.emit('disconnected', { code, reason, retryInMs });
  }

  /** Returns the wait before the next attempt. */
  #scheduleReconnect(): number {
    const initialMs = this.#options.backoff?.initialMs ?? 500;
    const maxMs = this.#options.backoff?.maxMs ?? 30_000;
    const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(this.#attempt, 30));
    const waitMs = Math.round(ceiling / 2 + (this.#random() * ceiling) / 2);
    this.#attempt += 1;
    this.#state = 'backoff';
    this.#nextAttemptAt = new Date(this.#clock.now().getTime() + waitMs);
    this.#retryTimer = this.#clock.setTimeout(() => {
      this.#retryTimer = null;
      this.#reconnects += 1;
      this.#connect();
    }, waitMs);
    return waitMs;
  }

  #checkLiveness(): void {
    const ws = this.#ws;
    if (!ws) return;
    const now = this.#nowMs();
    const connectTimeoutMs = this.#options.connectTimeoutMs ?? 10_000;
    if ((this.#state === 'connecting' || this.#state === 'handshaking') && now - this.#connectStartedAt > connectTimeoutMs) {
      this.#abandon(ws, 'handshake_timeout');
    } else if (this.#state === 'ready') {
      const ackTimeoutMs = this.#options.heartbeatAckTimeoutMs ?? 2 * this.#heartbeatIntervalMs;
      const unanswered = this.#heartbeatSentAt !== null && now - this.#heartbeatSentAt > ackTimeoutMs;
      const silent = now - this.#lastFrameAt > 2 * ackTimeoutMs;
      if (unanswered || silent) this.#abandon(ws, unanswered ? 'heartbeat_unanswered' : 'control_plane_silent');
    }
  }

  /** Gives up on a connection: the close handler schedules the reconnect. */
  #abandon(ws: WebSocket, reason: string): void {
    this.#lastError = reason;
    this.#options.logger.warn({ reason }, 'channel connection abandoned');
    ws.terminate();
  }

  /** A bad control-plane frame: nothing of it is used; the connection is closed and made again. */
  #refuse(ws: WebSocket, reason: string, detail?: string): void {
    this.#lastError = `refused control-plane frame: ${reason}`;
    this.#options.logger.warn({ reason, detail }, 'channel closed: bad frame from the control plane');
    if (this.#ws === ws) {
      ws.close(1008, reason);
      this.#clock.setTimeout(() => ws.terminate(), 2_000).unref();
      // No further frame of this connection is looked at.
      this.#ws = null;
      this.#connectedSince = null;
      const retryInMs = this.#scheduleReconnect();
      this.emit('disconnected', { code: 1008, reason, retryInMs });
    }
  }

  // ---- receiving ----

  #receive(ws: WebSocket, data: Buffer, isBinary: boolean): void {
    if (this.#ws !== ws || this.#state === 'stopped') return;
    this.#lastFrameAt = this.#nowMs();
    if (isBinary) {
      this.#refuse(ws, 'binary');
      return;
    }
    const opened = openFrame(data, { verify: this.#verify, mac: this.#macIn }, 'control-plane');
    if (!opened.ok) {
      this.#refuse(ws, opened.reason, opened.detail);
      return;
    }
    const msg = opened.payload;
    if (msg.seq !== this.#recvSeq + 1) {
      this.#refuse(ws, msg.seq <= this.#recvSeq ? 'replayed_seq' : 'out_of_order_seq');
      return;
    }
    if (this.#recvSeq === 0) {
      if (msg.t !== 'challenge') {
        this.#refuse(ws, 'expected_challenge');
        return;
      }
      this.#sid = msg.sid;
    } else if (msg.sid !== this.#sid) {
      this.#refuse(ws, 'wrong_session');
      return;
    }
    this.#recvSeq = msg.seq;
    this.#handle(ws, msg);
  }

  #handle(ws: WebSocket, msg: ServerMessage): void {
    switch (msg.t) {
      case 'challenge': {
        if (msg.seq !== 1) {
          this.#refuse(ws, 'unexpected_challenge');
          return;
        }
        this.#state = 'handshaking';
        const offer = answerMacOffer(msg, this.#options.machineId, this.#options.sessionMac ?? true);
        if (!offer.ok) {
          this.#refuse(ws, offer.reason, offer.detail);
          return;
        }
        this.#macIn = offer.keys?.check ?? null;
        this.#macOut = offer.keys?.seal ?? null;
        // The hello is signed (its type never takes a MAC, keys or not): the signature covers our kx, as the
        // challenge's covers theirs.
        this.#send({
          t: 'hello',
          machine_id: this.#options.machineId,
          challenge: msg.challenge,
          agent_time: this.#clock.now().toISOString(),
          agent_version: this.#options.agentVersion,
          commands_applied_upto: this.#queue?.commandsAppliedUpto ?? 0,
          ...(offer.kx ? { kx: offer.kx } : {}),
        });
        return;
      }
      case 'welcome': {
        if (this.#state !== 'handshaking' || msg.machine_id !== this.#options.machineId) {
          this.#refuse(ws, 'unexpected_welcome');
          return;
        }
        this.#welcome(msg);
        return;
      }
      case 'ack': {
        if (this.#state !== 'ready') {
          this.#refuse(ws, 'unexpected_ack');
          return;
        }
        this.#queue?.acknowledge(msg.upto);
        if (this.#heartbeatSentAt !== null) {
          this.#heartbeatSentAt = null;
          this.#lastHeartbeatAckAt = this.#clock.now();
        }
        this.emit('ack', msg.upto);
        this.#flush();
        return;
      }
      case 'relay_open':
      case 'relay_cancel': {
        if (this.#state !== 'ready') {
          this.#refuse(ws, 'unexpected_relay');
          return;
        }
        this.#options.onRelay?.(msg);
        return;
      }
      case 'logs_open':
      case 'logs_cancel': {
        if (this.#state !== 'ready') {
          this.#refuse(ws, 'unexpected_logs');
          return;
        }
        this.#options.onLogs?.(msg);
        return;
      }
      case 'command': {
        if (this.#state !== 'ready') {
          this.#refuse(ws, 'unexpected_command');
          return;
        }
        this.#commands = this.#commands.then(() => this.#applyCommand(ws, msg));
        return;
      }
      default: {
        // A control-plane type added to the catalog (shared/src/channel/catalog.ts) without its case fails here.
        const unhandled: never = msg;
        this.#refuse(ws, 'unexpected_type', (unhandled as ServerMessage).t);
      }
    }
  }

  #welcome(msg: WelcomeMessage): void {
    const queue = this.#queue as PersistentQueue;
    this.#state = 'ready';
    this.#readyAt = this.#nowMs();
    this.#connectedSince = this.#clock.now();
    this.#heartbeatIntervalMs = msg.heartbeat_interval_s * 1000;
    this.#lastError = null;
    this.#options.logger.info({ sessionId: this.#sid, ackedUpto: msg.acked_upto, queued: queue.size }, 'channel connected');
    const resume = async () => {
      if (msg.acked_upto >= queue.nextId) {
        this.#rebasing = true;
        try {
          if (await queue.rebase(msg.acked_upto)) {
            this.#options.logger.warn(
              { ackedUpto: msg.acked_upto },
              'the control plane has applied message ids this agent never issued; renumbered the queue after them',
            );
          }
        } finally {
          this.#rebasing = false;
        }
      }
      queue.acknowledge(msg.acked_upto);
      this.#flush();
    };
    resume().catch((error: unknown) => this.#options.logger.error({ err: String(error) }, 'channel queue could not resume'));
    this.emit('connected');
    try {
      this.#options.onConnected?.();
    } catch (error) {
      this.#options.logger.error({ err: String(error) }, 'onConnected failed');
    }
  }

  async #applyCommand(ws: WebSocket, command: CommandMessage): Promise<void> {
    const queue = this.#queue as PersistentQueue;
    const applied = queue.commandsAppliedUpto;
    const duplicate = command.command_seq <= applied;
    if (duplicate) {
      this.#duplicateCommands += 1;
    } else {
      if (command.command_seq > applied + 1) {
        // The control plane resumes after what it recorded as acknowledged; a gap means this state dir is behind it.
        this.#options.logger.warn({ commandSeq: command.command_seq, appliedUpto: applied }, 'command sequence skipped ahead');
      }
      try {
        await this.#options.onCommand(command);
      } catch (error) {
        this.#options.logger.error({ err: String(error), kind: command.kind, commandId: command.command_id }, 'command failed');
      }
      await queue.setCommandsApplied(command.command_seq);
    }
    this.emit('command', command, duplicate);
    if (this.#ws === ws && this.#state === 'ready') this.#send({ t: 'command_ack', upto: queue.commandsAppliedUpto });
  }

  // ---- sending ----

  /** Sends queued reliable messages not yet sent on this connection, keeping at most sendWindow in flight. */
  #flush(): void {
    const queue = this.#queue;
    if (this.#state !== 'ready' || this.#rebasing || !queue) return;
    const window = this.#options.sendWindow ?? 32;
    const entries = queue.entries;
    let index = 0;
    while (index < entries.length && (entries[index] as { id: number }).id <= this.#sentUpto) index += 1;
    while (index < entries.length && index < window) {
      const entry = entries[index] as { id: number; body: ReliableBody };
      if (!this.#send({ ...entry.body, id: entry.id })) return;
      this.#sentUpto = entry.id;
      index += 1;
    }
  }

  #nowMs(): number {
    return this.#clock.now().getTime();
  }

  /** Resolves after `ms` on the clock; the wait never keeps the process alive. */
  #delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#clock.setTimeout(resolve, ms).unref();
    });
  }

  /** Sends a relay frame on the current connection (unreliable); false when not connected. */
  sendRelay(body: { t: string } & Record<string, unknown>): boolean {
    return this.#state === 'ready' && this.#send(body);
  }

  /** Sends a job-log frame on the current connection (unreliable); false when not connected. */
  sendLogs(body: { t: string } & Record<string, unknown>): boolean {
    return this.#state === 'ready' && this.#send(body);
  }

  #send(body: { t: string } & Record<string, unknown>): boolean {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    const { t, ...rest } = body;
    this.#sendSeq += 1;
    const payload = { v: CHANNEL_PROTOCOL_VERSION, t, sid: this.#sid, seq: this.#sendSeq, ...rest };
    ws.send(sealFrame(payload, { sign: this.#sign, mac: this.#macOut }));
    return true;
  }
}
