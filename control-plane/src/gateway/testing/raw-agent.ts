import { generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto';
import {
  CHANNEL_PATH,
  createKeyExchange,
  ed25519PublicKeyFromBase64,
  ed25519PublicKeyToBase64,
  type FrameSigner,
  macFrame,
  nodeEd25519Signer,
  nodeEd25519Verifier,
  openFrame,
  type ServerMessage,
  type SessionMacKeys,
  signFrame,
} from '@ark/shared';
import WebSocket from 'ws';
import type { MachineDirectory } from '../handlers.js';

/** A machine identity for tests: an id and an ed25519 key pair. */
export interface TestMachine {
  id: string;
  privateKey: KeyObject;
  publicKeyBase64: string;
  sign: FrameSigner;
}

export function testMachine(): TestMachine {
  const { privateKey } = generateKeyPairSync('ed25519');
  return { id: randomUUID(), privateKey, publicKeyBase64: ed25519PublicKeyToBase64(privateKey), sign: nodeEd25519Signer(privateKey) };
}

/** A directory over a map the test fills: the gateway's MachineDirectory without the machines table. */
export class TestDirectory implements MachineDirectory {
  readonly keys = new Map<string, string>();
  lookups = 0;
  add(machine: TestMachine): this {
    this.keys.set(machine.id, machine.publicKeyBase64);
    return this;
  }
  async publicKeyOf(machineId: string): Promise<string | null> {
    this.lookups += 1;
    return this.keys.get(machineId) ?? null;
  }
}

export interface Closed {
  code: number;
  reason: string;
}

/**
 * A hand-driven agent that speaks the wire protocol frame by frame, so tests can send exactly the frames they
 * mean, broken ones included. It verifies every control-plane frame with the pinned key.
 */
export class RawAgent {
  readonly ws: WebSocket;
  readonly machine: TestMachine;
  readonly received: ServerMessage[] = [];
  readonly closed: Promise<Closed>;
  sid = '';
  challenge = '';
  /** The control plane's X25519 key from the challenge, when it offered MAC keys (the URL asked with mac=1). */
  offeredKx: string | null = null;
  /** The agreed MAC keys once `hello` sent our key (agreeMac). */
  mac: SessionMacKeys | null = null;
  #kx: string | null = null;
  /** Raw text of every control-plane frame, in order: which ones came signed (`s`) and which under the MAC (`m`). */
  readonly rawFrames: string[] = [];
  seq = 0;
  #waiters: Array<() => void> = [];
  #verify: ReturnType<typeof nodeEd25519Verifier>;
  refusedFrames = 0;

  private constructor(url: string, machine: TestMachine, controlPlanePublicKey: string) {
    this.machine = machine;
    this.#verify = nodeEd25519Verifier(ed25519PublicKeyFromBase64(controlPlanePublicKey));
    this.ws = new WebSocket(url, { perMessageDeflate: false });
    this.closed = new Promise((resolve) => {
      this.ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        this.#wake();
      });
    });
    this.ws.on('error', () => {});
    this.ws.on('message', (data: Buffer) => {
      this.rawFrames.push(data.toString('utf8'));
      const opened = openFrame(data, { verify: this.#verify, mac: this.mac?.check }, 'control-plane');
      if (!opened.ok) {
        this.refusedFrames += 1;
        return;
      }
      this.received.push(opened.payload);
      this.#wake();
    });
  }

  /** Connects and waits for the signed challenge. */
  static async connect(baseUrl: string, machine: TestMachine, controlPlanePublicKey: string, query = '?v=1'): Promise<RawAgent> {
    const agent = new RawAgent(`${baseUrl.replace(/^http/, 'ws')}${CHANNEL_PATH}${query}`, machine, controlPlanePublicKey);
    const challenge = await agent.next('challenge');
    agent.sid = challenge.sid;
    agent.challenge = (challenge as { challenge: string }).challenge;
    agent.offeredKx = (challenge as { kx?: string }).kx ?? null;
    return agent;
  }

  /** Answers the offered key: the next hello carries ours, and the MAC keys are agreed (as the real agent does). */
  agreeMac(): SessionMacKeys {
    if (!this.offeredKx) throw new Error('the challenge offered no key');
    const exchange = createKeyExchange();
    this.#kx = exchange.publicKey;
    this.mac = exchange.derive(this.offeredKx, { side: 'agent', challenge: this.challenge, sid: this.sid, machineId: this.machine.id });
    return this.mac;
  }

  /**
   * Sends a payload with this connection's sid and the next seq unless the overrides say otherwise: signed, or
   * with `mac` under the agreed MAC key (whatever the type, so tests can send what the catalog forbids).
   */
  send(body: Record<string, unknown>, options: { sign?: FrameSigner; mac?: boolean } = {}): void {
    this.seq += 1;
    this.ws.send(this.seal({ v: 1, sid: this.sid, seq: this.seq, ...body }, options));
  }

  /** The frame text of a full payload, signed or under the MAC. */
  seal(payload: Record<string, unknown>, options: { sign?: FrameSigner; mac?: boolean } = {}): string {
    if (options.mac) {
      if (!this.mac) throw new Error('no MAC keys agreed');
      return macFrame(payload, this.mac.seal);
    }
    return signFrame(payload, options.sign ?? this.machine.sign);
  }

  sendRaw(text: string | Buffer): void {
    this.ws.send(text);
  }

  /** The signed frame text `send` would produce, without sending it. */
  frame(body: Record<string, unknown>): string {
    return signFrame({ v: 1, sid: this.sid, seq: this.seq + 1, ...body }, this.machine.sign);
  }

  hello(overrides: Record<string, unknown> = {}): void {
    this.send({
      t: 'hello',
      machine_id: this.machine.id,
      challenge: this.challenge,
      agent_time: new Date().toISOString(),
      agent_version: 'test',
      commands_applied_upto: 0,
      ...(this.#kx ? { kx: this.#kx } : {}),
      ...overrides,
    });
  }

  /** Hello, then waits for the welcome. */
  async handshake(overrides: Record<string, unknown> = {}): Promise<Extract<ServerMessage, { t: 'welcome' }>> {
    this.hello(overrides);
    return this.next('welcome');
  }

  heartbeat(options: { mac?: boolean } = {}): void {
    this.send({ t: 'heartbeat', at: new Date().toISOString(), uptime_s: 1, healthy: true, problems: [], running_jobs: [] }, options);
  }

  /**
   * Heartbeats every `intervalMs` while the socket is open, as a real agent does between its other frames: a test
   * that waits on the control plane (a job's readiness, a metered period) with no frame for three heartbeat intervals
   * is closed with idle_timeout, and on a loaded machine those waits run long. Answers the function that stops it.
   */
  keepAlive(intervalMs: number): () => void {
    const timer = setInterval(() => {
      if (this.ws.readyState === WebSocket.OPEN) this.heartbeat();
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  telemetry(id: number, options: { mac?: boolean } = {}): void {
    this.send(telemetryBody(id), options);
  }

  /** The next received message of type `t` not yet consumed (earlier ones of other types are left). */
  async next<T extends ServerMessage['t']>(t: T, timeoutMs = 5_000): Promise<Extract<ServerMessage, { t: T }>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.received.findIndex((m) => m.t === t);
      if (index >= 0) return this.received.splice(index, 1)[0] as Extract<ServerMessage, { t: T }>;
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`connection closed while waiting for ${t}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${t} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.ws.close();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

export function telemetryBody(id: number): Record<string, unknown> {
  return {
    t: 'telemetry',
    id,
    samples: [
      {
        at: '2026-01-01T00:00:00.000Z',
        host: { cpu_utilization_pct: 12.5 },
        devices: [{ pci_address: '00000000:01:00.0', temperature_c: 50 }],
      },
    ],
  };
}
