import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  type AgentMessage,
  CHANNEL_PROTOCOL_VERSION,
  createKeyExchange,
  ed25519PublicKeyFromBase64,
  type FrameMacSigner,
  type FrameMacVerifier,
  type FrameSigner,
  type FrameVerifier,
  type HelloMessage,
  isHandledAgentMessage,
  isReliableAgentMessage,
  type KeyExchange,
  nodeEd25519Verifier,
  openFrame,
  peekPayload,
  type ReliableAgentMessage,
  sealFrame,
} from '@ark/shared';
import type { WebSocket } from 'ws';
import type { Clock } from '../clock.js';
import type { LogTunnel } from '../logs/tunnel.js';
import type { RelayTunnel } from '../relay/tunnel.js';
import { openChannelState } from '../store/channel-state.js';
import type { Store } from '../store/db.js';
import { acknowledgeCommands, commandsAfter } from '../store/outbox.js';
import type { GroupApplier } from './applier.js';
import type { ChannelHandlers } from './handlers.js';
import type { GatewayLogger } from './logger.js';
import type { GatewayMetrics } from './metrics.js';

// One agent connection of the gateway (server.ts): the handshake, frame checks in arrival order, reliable messages
// applied once, heartbeats, command delivery and acknowledgement, and every way a connection closes.

/** Close codes the agent sees. Every one of them means: reconnect with backoff. */
export const CLOSE_CODES = {
  protocolViolation: 1008,
  internalError: 1011,
  goingAway: 1001,
  replaced: 4001,
  timeout: 4002,
  slowConsumer: 4003,
  /**
   * A message type the catalog (shared/src/channel/catalog.ts) does not hold, or one only the control plane sends:
   * an agent newer than this control plane, or a confused one. Refused, never acknowledged as a no-op, so nothing
   * it meant is lost silently; the agent keeps it queued and retries with backoff until the control plane knows it.
   */
  unknownType: 4004,
} as const;

/** The gateway's tunables a session reads. */
export interface SessionSettings {
  readonly handshakeTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly inboxLimitFrames: number;
  readonly sendBufferLimitBytes: number;
  readonly deliveryBatch: number;
  readonly heartbeatIntervalS: number;
  readonly telemetryIntervalS: number;
}

/**
 * What a session needs of the gateway that accepted it, and nothing more: the settings and shared parts, and the
 * gateway's bookkeeping of which session holds each machine. The gateway builds one when it starts.
 */
export interface SessionContext {
  readonly settings: SessionSettings;
  readonly clock: Clock;
  readonly logger: GatewayLogger;
  readonly metrics: GatewayMetrics;
  readonly db: Store['db'];
  readonly handlers: Pick<ChannelHandlers, 'receive' | 'connected' | 'disconnected'>;
  /** Reliable messages go through it: applied once, with group commit. */
  readonly applier: Pick<GroupApplier, 'apply'>;
  readonly relay: Pick<RelayTunnel, 'receive'>;
  /** Job-log streams (logs/tunnel.ts). */
  readonly logs: Pick<LogTunnel, 'receive'>;
  /** Signs with the control plane's channel key. */
  readonly sign: FrameSigner;
  /** The machine's key on record; a failure (store down) closes the connection as an internal error. */
  publicKeyOf(machineId: string): Promise<string | null>;
  /** The handshake is done: this session holds the machine now (an older one is closed as replaced). */
  register(session: Session, machineId: string): void;
  /** The socket closed; true when it was the machine's current session here. */
  forget(session: Session): boolean;
}

type SessionState = 'awaiting_hello' | 'open' | 'closed';

/** Verifies hellos that name a machine with no usable key: a throwaway key, so nothing verifies, at the usual cost. */
const STAND_IN_VERIFIER: FrameVerifier = nodeEd25519Verifier(generateKeyPairSync('ed25519').publicKey);

/**
 * One agent connection. Frames are handled strictly in arrival order, one at a time: a frame is checked in
 * full before its handler runs, and the first bad frame closes the connection, so nothing after it is processed.
 */
export class Session {
  readonly #ctx: SessionContext;
  readonly #ws: WebSocket;
  readonly #sid = randomBytes(16).toString('base64url');
  readonly #challenge = randomBytes(32).toString('base64url');
  #state: SessionState = 'awaiting_hello';
  machineId: string | null = null;
  #verify: FrameVerifier | null = null;
  /** This connection's half of the MAC key agreement, when the agent asked for one (`mac=1`). */
  readonly #kx: KeyExchange | null;
  /** The agreed MAC keys: checks the agent's MACs, seals ours. Null until the hello, and for signature-only agents. */
  #macIn: FrameMacVerifier | null = null;
  #macOut: FrameMacSigner | null = null;
  #recvSeq = 0;
  #sendSeq = 0;
  /** On the clock's monotonic reading: the handshake and idle timeouts (checkTimeouts) compare against it. */
  readonly #openedAt: number;
  #lastFrameAt: number;
  // Received, not yet handled. Two arrays instead of an object per frame.
  readonly #inbox: Buffer[] = [];
  readonly #inboxAt: number[] = [];
  #draining: Promise<void> | null = null;
  #appliedUpto = 0;
  commandsSentUpto = 0;
  #delivering = false;
  #deliverAgain = false;
  #announced = false;

  constructor(ctx: SessionContext, ws: WebSocket, wantsMac = false) {
    this.#ctx = ctx;
    this.#ws = ws;
    this.#kx = wantsMac ? createKeyExchange() : null;
    this.#openedAt = ctx.clock.monotonicMs();
    this.#lastFrameAt = this.#openedAt;
  }

  begin(): void {
    this.#ws.on('message', (data: Buffer, isBinary: boolean) => this.#receive(data, isBinary));
    this.#ws.on('close', () => this.#closed());
    // ws reports oversized and malformed WebSocket frames here, then closes the socket itself.
    this.#ws.on('error', (error: Error & { code?: string }) => {
      const reason = error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? 'oversized' : 'websocket_error';
      this.#violation(reason, error.message);
    });
    const now = this.#ctx.clock.now();
    this.#send({
      t: 'challenge',
      challenge: this.#challenge,
      server_time: now.toISOString(),
      ...(this.#kx ? { kx: this.#kx.publicKey } : {}),
    });
  }

  /** Resolves once no handler of this connection is running. */
  settled(): Promise<void> {
    return this.#draining ?? Promise.resolve();
  }

  /** `now` is the clock's monotonic reading (the gateway's sweep passes it). */
  checkTimeouts(now: number): void {
    if (this.#state === 'awaiting_hello' && now - this.#openedAt > this.#ctx.settings.handshakeTimeoutMs) {
      this.#fail(CLOSE_CODES.timeout, 'handshake_timeout');
    } else if (this.#state === 'open' && now - this.#lastFrameAt > this.#ctx.settings.idleTimeoutMs && !this.#draining) {
      this.#fail(CLOSE_CODES.timeout, 'idle_timeout');
    }
  }

  close(code: number, reason: string, count: boolean): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    if (count) this.#ctx.metrics.closes.inc({ reason });
    this.#inbox.length = 0;
    this.#inboxAt.length = 0;
    this.#ws.close(code, reason);
    // A peer that never answers the close frame must not keep the socket.
    this.#ctx.clock.setTimeout(() => this.#ws.terminate(), 2_000).unref();
  }

  terminate(): void {
    this.#ws.terminate();
  }

  // ---- receiving ----

  #receive(data: Buffer, isBinary: boolean): void {
    if (this.#state === 'closed') return;
    this.#lastFrameAt = this.#ctx.clock.monotonicMs();
    // Handling latency is a measurement, not a decision: real time, whatever the clock.
    const at = performance.now();
    if (isBinary) {
      this.#violation('binary');
      return;
    }
    if (this.#inbox.length >= this.#ctx.settings.inboxLimitFrames) {
      this.#violation('inbox_overflow', `${this.#inbox.length} frames pending`);
      return;
    }
    this.#inbox.push(data);
    this.#inboxAt.push(at);
    if (!this.#draining) this.#draining = this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#inbox.length > 0 && this.#state !== 'closed') {
        const raw = this.#inbox.shift() as Buffer;
        const at = this.#inboxAt.shift() as number;
        const type = this.#state === 'awaiting_hello' ? await this.#hello(raw) : await this.#frame(raw);
        if (type) {
          this.#ctx.metrics.frames.record(type, (performance.now() - at) / 1000);
        }
      }
    } catch (error) {
      this.#ctx.logger.error({ err: error, machineId: this.machineId }, 'agent channel frame handling failed');
      this.#fail(CLOSE_CODES.internalError, 'handler_failed');
    } finally {
      this.#draining = null;
      // A frame may have arrived between the loop's last check and here.
      if (this.#inbox.length > 0 && this.#state !== 'closed') this.#draining = this.#drain();
    }
  }

  /** The first frame must be a hello signed by the key on record for the machine it names. */
  async #hello(raw: Buffer): Promise<string | null> {
    const claimed = peekPayload(raw);
    const claimedMachineId = typeof claimed?.machine_id === 'string' ? claimed.machine_id.slice(0, 64) : null;
    if (claimed?.t !== 'hello' || !claimedMachineId) {
      // Let the codec name what is wrong (unsigned, version, schema) when it can; otherwise it is not a hello.
      const reason = claimed === null ? 'malformed_frame' : claimed.v !== CHANNEL_PROTOCOL_VERSION ? 'unknown_version' : 'expected_hello';
      this.#violation(reason, undefined, claimedMachineId);
      return null;
    }
    const publicKey = await this.#ctx.publicKeyOf(claimedMachineId);
    if (this.#state === 'closed') return null;
    // A machine id with no usable key on record is checked against a stand-in key that verifies nothing, so a
    // stranger's hello is refused exactly like a forged one for a real machine: which ids exist never leaks.
    let verify: FrameVerifier = STAND_IN_VERIFIER;
    let unknown: string | undefined = publicKey ? undefined : 'unknown machine';
    if (publicKey) {
      try {
        verify = nodeEd25519Verifier(ed25519PublicKeyFromBase64(publicKey));
      } catch {
        unknown = 'the key on record is not an ed25519 key';
      }
    }
    const opened = openFrame(raw, verify, 'agent');
    if (!opened.ok || unknown) {
      this.#violation(opened.ok ? 'bad_signature' : opened.reason, unknown ?? (opened.ok ? undefined : opened.detail), claimedMachineId);
      return null;
    }
    const hello = opened.payload;
    if (hello.t !== 'hello') return this.#violationNull('expected_hello', undefined, claimedMachineId);
    if (hello.sid !== this.#sid) return this.#violationNull('wrong_session', undefined, claimedMachineId);
    if (hello.seq !== 1)
      return this.#violationNull(hello.seq < 1 ? 'replayed_seq' : 'out_of_order_seq', `seq ${hello.seq}`, claimedMachineId);
    if (hello.challenge !== this.#challenge) return this.#violationNull('bad_challenge', undefined, claimedMachineId);
    if (hello.kx !== undefined) {
      // Keys answer an offer: a kx the challenge did not ask for is a confused or tampered-with agent.
      if (!this.#kx) return this.#violationNull('unexpected_kx', undefined, claimedMachineId);
      try {
        const keys = this.#kx.derive(hello.kx, {
          side: 'control-plane',
          challenge: this.#challenge,
          sid: this.#sid,
          machineId: hello.machine_id,
        });
        this.#macIn = keys.check;
        this.#macOut = keys.seal;
      } catch (error) {
        return this.#violationNull('bad_kx', (error as Error).message, claimedMachineId);
      }
    }
    this.#recvSeq = 1;
    this.#verify = verify;
    this.machineId = hello.machine_id;
    await this.#welcome(hello);
    return 'hello';
  }

  async #welcome(hello: HelloMessage): Promise<void> {
    const ctx = this.#ctx;
    const machineId = hello.machine_id;
    const now = ctx.clock.now();
    const state = await openChannelState(ctx.db, machineId);
    let acked = state.commandsAckedUpto;
    if (hello.commands_applied_upto > acked) acked = await acknowledgeCommands(ctx.db, machineId, hello.commands_applied_upto, now);
    if (this.#state === 'closed') return;
    this.#appliedUpto = state.lastAppliedMsgId;
    // Acknowledged commands are never resent; everything after them is, in order.
    this.commandsSentUpto = acked;
    this.#state = 'open';
    ctx.register(this, machineId);
    this.#send({
      t: 'welcome',
      machine_id: machineId,
      acked_upto: this.#appliedUpto,
      heartbeat_interval_s: ctx.settings.heartbeatIntervalS,
      telemetry_interval_s: ctx.settings.telemetryIntervalS,
      server_time: now.toISOString(),
    });
    const auth = this.#macOut ? 'mac' : 'signature';
    ctx.metrics.handshakes.inc({ auth });
    ctx.logger.debug({ machineId, sid: this.#sid, agentVersion: hello.agent_version, auth }, 'agent connected');
    this.#announced = true;
    try {
      await ctx.handlers.connected(machineId, now);
    } catch (error) {
      ctx.logger.error({ err: error, machineId }, 'agent channel connect hook failed');
    }
    // Nothing queued at hello time: skip the query; wake-ups (and the poll) cover what is queued from now on.
    if (state.lastCommandSeq > this.commandsSentUpto) this.deliver();
  }

  async #frame(raw: Buffer): Promise<string | null> {
    const opened = openFrame(raw, { verify: this.#verify as FrameVerifier, mac: this.#macIn }, 'agent');
    if (!opened.ok) {
      const code = opened.reason === 'unknown_type' ? CLOSE_CODES.unknownType : CLOSE_CODES.protocolViolation;
      return this.#violationNull(opened.reason, opened.detail, null, code);
    }
    const msg = opened.payload;
    if (msg.sid !== this.#sid) return this.#violationNull('wrong_session');
    if (msg.seq !== this.#recvSeq + 1) {
      return this.#violationNull(msg.seq <= this.#recvSeq ? 'replayed_seq' : 'out_of_order_seq', `seq ${msg.seq} after ${this.#recvSeq}`);
    }
    this.#recvSeq = msg.seq;
    await this.#dispatch(msg);
    return msg.t;
  }

  async #dispatch(msg: AgentMessage): Promise<void> {
    const ctx = this.#ctx;
    const machineId = this.machineId as string;
    if (isReliableAgentMessage(msg)) return this.#applyReliable(msg);
    if (isHandledAgentMessage(msg)) {
      try {
        await ctx.handlers.receive(machineId, msg, ctx.clock.now());
      } catch (error) {
        // Not acknowledged: the agent sees the control plane unhealthy; the next heartbeat tries again.
        ctx.logger.warn({ err: error, machineId, type: msg.t }, 'agent message handler failed');
        return;
      }
      // A heartbeat's ack tells the agent the control plane is alive, with a fresh cumulative upto.
      if (msg.t === 'heartbeat') this.#send({ t: 'ack', upto: this.#appliedUpto });
      return;
    }
    // What the catalog says the gateway consumes itself.
    switch (msg.t) {
      case 'command_ack': {
        if (msg.upto > this.commandsSentUpto) {
          // Acknowledging what was never sent here: a confused agent, or one also connected elsewhere. Never
          // trusted past what the outbox holds (acknowledgeCommands clamps).
          ctx.logger.warn(
            { machineId, upto: msg.upto, sent: this.commandsSentUpto },
            'agent acknowledged commands not sent on this connection',
          );
        }
        await acknowledgeCommands(ctx.db, machineId, msg.upto, ctx.clock.now());
        return;
      }
      case 'relay_head':
      case 'relay_data':
      case 'relay_end':
        ctx.relay.receive(machineId, msg);
        return;
      case 'logs_data':
      case 'logs_end':
        ctx.logs.receive(machineId, msg);
        return;
      case 'hello':
        return void this.#violation('unexpected_type', 'hello after the handshake');
      default: {
        // A catalog type marked consumedBy 'gateway' with no case above fails the typecheck here.
        const unhandled: never = msg;
        throw new Error(`no gateway case for agent message type ${(unhandled as AgentMessage).t}`);
      }
    }
  }

  /** Applies a reliable message once: the effect and the applied mark commit together; then the cumulative ack. */
  async #applyReliable(msg: ReliableAgentMessage): Promise<void> {
    const ctx = this.#ctx;
    const machineId = this.machineId as string;
    if (msg.id > this.#appliedUpto) {
      await ctx.applier.apply(machineId, msg);
      // Applied now, or already by another connection: either way everything up to it is done.
      this.#appliedUpto = msg.id;
    }
    if (this.#state !== 'closed') this.#send({ t: 'ack', upto: this.#appliedUpto });
  }

  // ---- sending ----

  #send(body: { t: string } & Record<string, unknown>): boolean {
    if (this.#state === 'closed') return false;
    if (this.#ws.bufferedAmount > this.#ctx.settings.sendBufferLimitBytes) {
      this.#fail(CLOSE_CODES.slowConsumer, 'slow_consumer');
      return false;
    }
    const { t, ...rest } = body;
    this.#sendSeq += 1;
    const payload = { v: CHANNEL_PROTOCOL_VERSION, t, sid: this.#sid, seq: this.#sendSeq, ...rest };
    this.#ws.send(sealFrame(payload, { sign: this.#ctx.sign, mac: this.#macOut }));
    return true;
  }

  /** Sends a relay or job-log frame (relay/tunnel.ts, logs/tunnel.ts) on this connection; false once it is closing or closed. */
  sendRelay(body: { t: string } & Record<string, unknown>): boolean {
    return this.#state === 'open' && this.#send(body);
  }

  /** Sends outbox commands after the last one sent, in order; wake-ups during a run trigger one more run. */
  deliver(): void {
    if (this.#state !== 'open') return;
    if (this.#delivering) {
      this.#deliverAgain = true;
      return;
    }
    this.#delivering = true;
    void this.#deliverLoop().finally(() => {
      this.#delivering = false;
    });
  }

  async #deliverLoop(): Promise<void> {
    const ctx = this.#ctx;
    const machineId = this.machineId as string;
    try {
      for (;;) {
        this.#deliverAgain = false;
        const batch = await commandsAfter(ctx.db, machineId, this.commandsSentUpto, ctx.settings.deliveryBatch);
        for (const command of batch) {
          if (this.#state !== 'open') return;
          if (command.commandSeq <= this.commandsSentUpto) continue;
          const sent = this.#send({
            t: 'command',
            command_seq: command.commandSeq,
            command_id: command.commandId,
            kind: command.kind,
            body: command.body,
          });
          if (!sent) return;
          this.commandsSentUpto = command.commandSeq;
        }
        if (batch.length < ctx.settings.deliveryBatch && !this.#deliverAgain) return;
      }
    } catch (error) {
      // The next wake-up or poll tries again.
      ctx.logger.warn({ err: error, machineId }, 'agent outbox delivery failed');
    }
  }

  // ---- closing ----

  #violation(reason: string, detail?: string, claimedMachineId?: string | null, code: number = CLOSE_CODES.protocolViolation): void {
    if (this.#state === 'closed') return;
    this.#ctx.logger.warn(
      { reason, detail, machineId: this.machineId ?? claimedMachineId ?? null, sid: this.#sid, authenticated: this.machineId !== null },
      'agent channel closed: protocol violation',
    );
    this.close(code, reason, true);
  }

  #violationNull(reason: string, detail?: string, claimedMachineId?: string | null, code?: number): null {
    this.#violation(reason, detail, claimedMachineId, code);
    return null;
  }

  #fail(code: number, reason: string): void {
    if (this.#state === 'closed') return;
    this.#ctx.logger.info({ reason, machineId: this.machineId, sid: this.#sid }, 'agent channel closed');
    this.close(code, reason, true);
  }

  #closed(): void {
    if (this.#state !== 'closed') {
      this.#state = 'closed';
      this.#ctx.metrics.closes.inc({ reason: 'peer_closed' });
    }
    const wasCurrent = this.#ctx.forget(this);
    if (this.#announced && wasCurrent && this.machineId) {
      const machineId = this.machineId;
      const ctx = this.#ctx;
      ctx.handlers.disconnected(machineId, ctx.clock.now()).catch((error: unknown) => {
        ctx.logger.error({ err: error, machineId }, 'agent channel disconnect hook failed');
      });
    }
  }
}
