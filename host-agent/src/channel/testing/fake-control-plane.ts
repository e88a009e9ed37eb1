import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import {
  type AgentMessage,
  CHANNEL_PATH,
  ed25519PublicKeyFromBase64,
  ed25519PublicKeyToBase64,
  type FrameSigner,
  nodeEd25519Signer,
  nodeEd25519Verifier,
  openFrame,
  signFrame,
} from '@ark/shared';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A minimal control plane for the client's unit tests: it speaks the real wire protocol (signed frames,
 * challenge, welcome, sequence numbers) over a real socket, and lets a test decide every answer. The real
 * gateway is exercised against the client in test/e2e/channel.test.ts.
 */
export class FakeControlPlane {
  readonly wss: WebSocketServer;
  readonly publicKeyBase64: string;
  readonly #sign: FrameSigner;
  readonly #agentKeys = new Map<string, string>();
  /** Every verified agent message, all connections, in arrival order. */
  readonly received: Array<AgentMessage & { connection: number }> = [];
  readonly connections: FakeConnection[] = [];
  /** What the welcome says was applied. */
  ackedUpto = 0;
  /** Answer heartbeats with an ack. */
  ackHeartbeats = true;
  /** Acknowledge reliable messages as they arrive. */
  autoAck = true;
  /** Sign with this instead (a tampering control plane). */
  signOverride: FrameSigner | null = null;
  #waiters: Array<() => void> = [];

  private constructor(wss: WebSocketServer) {
    this.wss = wss;
    const { privateKey } = generateKeyPairSync('ed25519');
    this.publicKeyBase64 = ed25519PublicKeyToBase64(privateKey);
    this.#sign = nodeEd25519Signer(privateKey);
    wss.on('connection', (ws) => this.#accept(ws));
  }

  static async start(): Promise<FakeControlPlane> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: CHANNEL_PATH });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    return new FakeControlPlane(wss);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.wss.address() as AddressInfo).port}${CHANNEL_PATH}?v=1`;
  }

  allow(machineId: string, publicKeyBase64: string): void {
    this.#agentKeys.set(machineId, publicKeyBase64);
  }

  get current(): FakeConnection | undefined {
    return this.connections.at(-1);
  }

  /** Waits until `probe` holds, re-checking whenever a frame arrives. */
  async until(probe: () => boolean, timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!probe()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('condition not met in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 50));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    for (const connection of this.connections) connection.ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  signer(): FrameSigner {
    return this.signOverride ?? this.#sign;
  }

  wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  record(message: AgentMessage, connection: number): void {
    this.received.push({ ...message, connection });
    this.wake();
  }

  keyOf(machineId: string): string | undefined {
    return this.#agentKeys.get(machineId);
  }

  #accept(ws: WebSocket): void {
    const connection = new FakeConnection(this, ws, this.connections.length);
    this.connections.push(connection);
    this.wake();
  }
}

export class FakeConnection {
  readonly sid = randomBytes(16).toString('base64url');
  readonly challenge = randomBytes(32).toString('base64url');
  seq = 0;
  recvSeq = 0;
  machineId: string | null = null;
  welcomed = false;
  closed: { code: number; reason: string } | null = null;

  constructor(
    readonly control: FakeControlPlane,
    readonly ws: WebSocket,
    readonly index: number,
  ) {
    ws.on('message', (data: Buffer) => this.#receive(data));
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      control.wake();
    });
    this.send({ t: 'challenge', challenge: this.challenge, server_time: new Date().toISOString() });
  }

  send(body: Record<string, unknown>): void {
    this.seq += 1;
    this.ws.send(signFrame({ v: 1, sid: this.sid, seq: this.seq, ...body }, this.control.signer()));
  }

  ack(upto: number): void {
    this.send({ t: 'ack', upto });
  }

  command(commandSeq: number, body: Record<string, unknown> = { go_live: true }, kind = 'update_go_live'): void {
    this.send({
      t: 'command',
      command_seq: commandSeq,
      command_id: `00000000-0000-4000-8000-${String(commandSeq).padStart(12, '0')}`,
      kind,
      body,
    });
  }

  #receive(data: Buffer): void {
    const claimed = this.machineId ?? (JSON.parse(JSON.parse(data.toString()).p) as { machine_id?: string }).machine_id ?? '';
    const key = this.control.keyOf(claimed);
    if (!key) return void this.ws.close(1008, 'unknown_machine');
    const opened = openFrame(data, nodeEd25519Verifier(ed25519PublicKeyFromBase64(key)), 'agent');
    if (!opened.ok) return void this.ws.close(1008, opened.reason);
    const msg = opened.payload;
    if (msg.sid !== this.sid || msg.seq !== this.recvSeq + 1) return void this.ws.close(1008, 'sequence');
    this.recvSeq = msg.seq;
    if (msg.t === 'hello') {
      if (msg.challenge !== this.challenge) return void this.ws.close(1008, 'bad_challenge');
      this.machineId = msg.machine_id;
      this.welcomed = true;
      this.send({
        t: 'welcome',
        machine_id: msg.machine_id,
        acked_upto: this.control.ackedUpto,
        heartbeat_interval_s: 15,
        telemetry_interval_s: 60,
        server_time: new Date().toISOString(),
      });
    } else if (msg.t === 'heartbeat') {
      if (this.control.ackHeartbeats) this.ack(this.control.ackedUpto);
    } else if ('id' in msg && this.control.autoAck) {
      this.control.ackedUpto = Math.max(this.control.ackedUpto, msg.id);
      this.ack(this.control.ackedUpto);
    }
    this.control.record(msg, this.index);
  }
}
