// The simulated agent of agents.bench.ts, run inside its client processes (agents-client.ts): a real WebSocket with
// the challenge handshake and signed frames (node:crypto signs here; the bytes are what tweetnacl would produce), a
// heartbeat every 15 s and a telemetry batch (6 samples, 2 GPUs) every 60 s, each at its own random phase; every
// control-plane frame is checked as a real agent checks it. A metered agent (a real machine row with a RUNNING job,
// metered-jobs.ts) lists its job in its heartbeats and sends a meter receipt every receipt interval, as the host
// agent does: each receipt covers the time since the previous one (the first, the time since the meter started), so
// an agent that connects late sends one longer receipt instead of a burst.
import {
  CHANNEL_MAX_FRAME_BYTES,
  createKeyExchange,
  ed25519PublicKeyFromBase64,
  type FrameSigner,
  type FrameVerifier,
  nodeEd25519Signer,
  nodeEd25519Verifier,
  openFrame,
  type SessionMacKeys,
  sealFrame,
} from '@ark/shared';
import WebSocket from 'ws';
import type { BenchMachine } from './agents-server.js';

/**
 * Seals one outgoing agent frame (every type: hello, heartbeat, telemetry, meter receipt) as the host agent does: under
 * the connection's MAC where the catalog allows it and keys were agreed, an ed25519 signature otherwise (the hello,
 * receipts; every frame of an agent run with ARK_BENCH_MAC=0, as agents before MAC keys).
 */
export function sealAgentFrame(payload: { t: string } & Record<string, unknown>, sign: FrameSigner, mac: SessionMacKeys | null): string {
  return sealFrame(payload, { sign, mac: mac?.seal });
}

/** Whether the agents ask for MAC keys (mac=1 on the upgrade URL); ARK_BENCH_MAC=0 measures signatures only. */
const ASK_FOR_MAC = process.env.ARK_BENCH_MAC !== '0';

export interface FleetSettings {
  /** Channel URL of each replica; agent i connects to replica i % urls.length. */
  urls: string[];
  controlPlaneKey: string;
  heartbeatIntervalMs: number;
  telemetryIntervalMs: number;
  receiptIntervalMs: number;
  /** Verify every control-plane frame's signature, or only the handshake's (acks are then checked for sequence). */
  verifyAll: boolean;
}

const simGpu = (bus: number) => ({
  pci_address: `00000000:${bus}:00.0`,
  temperature_c: 61,
  utilization_pct: 87,
  power_watts: 243.5,
  fan_pct: 40,
  memory_used_bytes: 21_474_836_480,
});

/** What every simulated agent's telemetry reads: two GPUs and the host. */
const SIM_READINGS = {
  host: {
    cpu_utilization_pct: 35.5,
    load1: 2.1,
    memory_used_bytes: 34_359_738_368,
    disk_free_bytes: 512_000_000_000,
    uptime_s: 86_400,
  },
  devices: [simGpu(1), simGpu(2)],
};

/**
 * A batch's samples as a real agent sends them: six, 10 s apart, the last one now. Stamped with the send time so the
 * control plane stores them (samples older than the retention, two days, are dropped unstored).
 */
export function simTelemetrySamples(nowMs: number): unknown[] {
  return Array.from({ length: 6 }, (_, i) => ({ at: new Date(nowMs - (5 - i) * 10_000).toISOString(), ...SIM_READINGS }));
}

/** A metered machine's RUNNING job, as metered-jobs.ts seeded it. */
export interface MeteredJob {
  jobId: string;
  /** When the job's meter started (epoch ms). */
  meterStartMs: number;
}

/** What one client process counts over its agents; `measuring` limits the per-hold counters to the hold. */
export class Fleet {
  readonly verify: FrameVerifier;
  measuring = false;
  rtts: number[] = [];
  heartbeats = 0;
  telemetryBatches = 0;
  /** Receipts sent and acknowledged (committed by the replica) during the hold, per replica. */
  receiptsSent: number[];
  receiptsAcked: number[];
  closesAfterWelcome = 0;
  badFrames = 0;
  fdExhausted = false;

  constructor(readonly settings: FleetSettings) {
    this.verify = nodeEd25519Verifier(ed25519PublicKeyFromBase64(settings.controlPlaneKey));
    this.receiptsSent = settings.urls.map(() => 0);
    this.receiptsAcked = settings.urls.map(() => 0);
  }

  /** Starts a hold's counters. */
  resetHold(): void {
    this.rtts = [];
    this.heartbeats = 0;
    this.telemetryBatches = 0;
    this.receiptsSent.fill(0);
    this.receiptsAcked.fill(0);
  }
}

// Skips the signature check only (size, JSON, version, schema and sequence are still checked).
const acceptAny: FrameVerifier = () => true;

type Pending = { sentAt: number; receipt: boolean };

/** One simulated agent: a real signed connection with the agent's timings. */
export class SimAgent {
  ws: WebSocket | null = null;
  sid = '';
  seq = 0;
  recvSeq = 0;
  ready = false;
  nextId = 1;
  // Each heartbeat, telemetry batch and receipt gets exactly one ack, in order: a FIFO of what was sent.
  readonly pending: Pending[] = [];
  timer: NodeJS.Timeout | null = null;
  nextHeartbeatAt = 0;
  nextTelemetryAt = 0;
  nextReceiptAt = Number.POSITIVE_INFINITY;
  /** The meter: the next receipt's seq and period start (epoch ms). */
  meterSeq = 1;
  meteredUntilMs = 0;
  readonly sign: FrameSigner;
  /** The connection's MAC keys, when the challenge offered them. */
  mac: SessionMacKeys | null = null;

  constructor(
    readonly fleet: Fleet,
    readonly machine: BenchMachine,
    /** The replica this agent connects to (an index into the fleet's urls). */
    readonly replica: number,
    readonly job: MeteredJob | null,
  ) {
    this.sign = nodeEd25519Signer(machine.privateKey);
    if (job) this.meteredUntilMs = job.meterStartMs;
  }

  connect(): Promise<boolean> {
    const settings = this.fleet.settings;
    return new Promise((resolve) => {
      let settled = false;
      const settle = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve(ok);
      };
      const deadline = setTimeout(() => {
        this.ws?.terminate();
        settle(false);
      }, 30_000);
      const url = `${settings.urls[this.replica] as string}${ASK_FOR_MAC ? '&mac=1' : ''}`;
      const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: CHANNEL_MAX_FRAME_BYTES });
      this.mac = null;
      this.ws = ws;
      ws.on('error', (error: Error & { code?: string }) => {
        if (error.code === 'EMFILE' || error.code === 'ENFILE') this.fleet.fdExhausted = true;
      });
      ws.on('close', () => {
        if (this.ready) this.fleet.closesAfterWelcome += 1;
        this.ready = false;
        if (this.timer) clearTimeout(this.timer);
        settle(false);
      });
      ws.on('message', (data: Buffer) => {
        const verify = this.ready && !settings.verifyAll ? acceptAny : this.fleet.verify;
        const opened = openFrame(data, { verify, mac: this.mac?.check }, 'control-plane');
        if (!opened.ok || opened.payload.seq !== this.recvSeq + 1) {
          this.fleet.badFrames += 1;
          ws.terminate();
          return;
        }
        const msg = opened.payload;
        this.recvSeq = msg.seq;
        if (msg.t === 'challenge') {
          this.sid = msg.sid;
          const exchange = msg.kx ? createKeyExchange() : null;
          if (exchange && msg.kx) {
            this.mac = exchange.derive(msg.kx, { side: 'agent', challenge: msg.challenge, sid: msg.sid, machineId: this.machine.id });
          }
          this.send({
            t: 'hello',
            machine_id: this.machine.id,
            challenge: msg.challenge,
            agent_time: new Date().toISOString(),
            agent_version: 'bench',
            commands_applied_upto: 0,
            ...(exchange ? { kx: exchange.publicKey } : {}),
          });
        } else if (msg.t === 'welcome') {
          this.ready = true;
          this.nextId = msg.acked_upto + 1;
          const now = Date.now();
          this.nextHeartbeatAt = now + Math.random() * settings.heartbeatIntervalMs;
          this.nextTelemetryAt = now + Math.random() * settings.telemetryIntervalMs;
          // The meter's next period end after now, on the job's own phase.
          if (this.job) {
            const periods = Math.floor((now - this.job.meterStartMs) / settings.receiptIntervalMs) + 1;
            this.nextReceiptAt = this.job.meterStartMs + periods * settings.receiptIntervalMs;
          }
          this.schedule();
          settle(true);
        } else if (msg.t === 'ack') {
          const sent = this.pending.shift();
          if (sent === undefined || !this.fleet.measuring) return;
          this.fleet.rtts.push(performance.now() - sent.sentAt);
          if (sent.receipt) this.fleet.receiptsAcked[this.replica] = (this.fleet.receiptsAcked[this.replica] ?? 0) + 1;
        }
      });
    });
  }

  schedule(): void {
    const due = Math.min(this.nextHeartbeatAt, this.nextTelemetryAt, this.nextReceiptAt);
    this.timer = setTimeout(() => this.tick(), Math.max(0, due - Date.now()));
  }

  tick(): void {
    if (!this.ready) return;
    const now = Date.now();
    const settings = this.fleet.settings;
    if (now >= this.nextHeartbeatAt) {
      this.nextHeartbeatAt += settings.heartbeatIntervalMs;
      this.pending.push({ sentAt: performance.now(), receipt: false });
      const running = this.job ? [{ job_id: this.job.jobId, fence: '1', container_state: 'running' }] : [];
      this.send({ t: 'heartbeat', at: new Date(now).toISOString(), uptime_s: 86_400, healthy: true, problems: [], running_jobs: running });
      if (this.fleet.measuring) this.fleet.heartbeats += 1;
    }
    if (now >= this.nextTelemetryAt) {
      this.nextTelemetryAt += settings.telemetryIntervalMs;
      this.pending.push({ sentAt: performance.now(), receipt: false });
      this.send({ t: 'telemetry', id: this.nextId++, samples: simTelemetrySamples(now) });
      if (this.fleet.measuring) this.fleet.telemetryBatches += 1;
    }
    if (this.job && now >= this.nextReceiptAt) {
      this.sendReceipt(this.job, this.nextReceiptAt);
      this.nextReceiptAt += settings.receiptIntervalMs;
    }
    this.schedule();
  }

  /** The job's next receipt, for the time since the previous one up to `periodEndMs`, fully run. */
  sendReceipt(job: MeteredJob, periodEndMs: number): void {
    const periodStart = this.meteredUntilMs;
    this.meteredUntilMs = periodEndMs;
    this.pending.push({ sentAt: performance.now(), receipt: true });
    this.send({
      t: 'meter_receipt',
      id: this.nextId++,
      job_id: job.jobId,
      fence: '1',
      meter_seq: this.meterSeq++,
      period_start: new Date(periodStart).toISOString(),
      period_end: new Date(periodEndMs).toISOString(),
      runtime_ms: String(periodEndMs - periodStart),
      final: false,
    });
    if (this.fleet.measuring) this.fleet.receiptsSent[this.replica] = (this.fleet.receiptsSent[this.replica] ?? 0) + 1;
  }

  send(body: { t: string } & Record<string, unknown>): void {
    this.seq += 1;
    this.ws?.send(sealAgentFrame({ v: 1, sid: this.sid, seq: this.seq, ...body }, this.sign, this.mac));
  }

  close(): void {
    this.ready = false;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.terminate();
  }
}
