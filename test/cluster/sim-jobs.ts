// The job side of the simulated agents (sim-agents.ts): launch_job answered with accepted and ready (the machine's SSH
// endpoint for the readiness check), a signed meter receipt every second once the job is RUNNING (the workload says
// when, with the job's meter_started_at: receipts start there, or at a rebind that came first, back to back, so
// every millisecond sent is countable), a final receipt and stopped on stop_job, cleaned on clean_job. Each job keeps
// what it sent per meter_seq and what was acknowledged, for the "every meter receipt counted once" check.
import type { Sim } from './sim-agents.js';

export interface SimJob {
  jobId: string;
  fence: string;
  sim: Sim;
  /** The end of the last period sent; null until the job is RUNNING. */
  meteredUntil: number | null;
  /**
   * When the last rebind reached this side: the control plane's meter floor is at or before it, so metering may not
   * start earlier (a rebind can arrive before the workload sees the job RUNNING).
   */
  reboundAt: number | null;
  meterSeq: number;
  /** Runtime sent, one entry per meter_seq, and the message id that carried it. */
  receipts: Array<{ id: number; fence: string; seq: number; runtimeMs: number; acked: boolean }>;
  stopped: boolean;
  cleaned: boolean;
  /** What happened to the job on this side, for a failure's detail. */
  log: string[];
}

type SendReliable = (sim: Sim, body: Record<string, unknown>) => void;

export class SimJobs {
  readonly byId = new Map<string, SimJob>();
  resent = 0;
  receiptsSent = 0;

  constructor(readonly sendReliable: SendReliable) {}

  #status(job: SimJob, status: string, extra: Record<string, unknown> = {}): void {
    this.sendReliable(job.sim, { t: 'job_status', job_id: job.jobId, fence: job.fence, status, at: new Date().toISOString(), ...extra });
  }

  #receipt(job: SimJob, final: boolean): void {
    if (job.meteredUntil === null) return;
    const end = Math.max(job.meteredUntil, Date.now());
    job.meterSeq++;
    const runtimeMs = end - job.meteredUntil;
    this.sendReliable(job.sim, {
      t: 'meter_receipt',
      job_id: job.jobId,
      fence: job.fence,
      meter_seq: job.meterSeq,
      period_start: new Date(job.meteredUntil).toISOString(),
      period_end: new Date(end).toISOString(),
      runtime_ms: String(runtimeMs),
      final,
    });
    job.receipts.push({ id: job.sim.lastId, fence: job.fence, seq: job.meterSeq, runtimeMs, acked: false });
    job.log.push(
      `#${job.meterSeq} id ${job.sim.lastId} ${new Date(job.meteredUntil).toISOString().slice(17, 23)}+${runtimeMs}${final ? ' final' : ''}`,
    );
    job.meteredUntil = end;
    this.receiptsSent++;
  }

  /**
   * A launch_job for a job already here is a rebind (the control plane took the job back from RECONCILING with a
   * fresh fence, as the real agent's job-supervisor.ts handles it): adopt the newer fence, restart the meter sequence,
   * announce the job's state again. Runtime before the rebind is never charged (the gap), so the new fence's first
   * period starts now: everything the new fence meters is countable.
   */
  #rebind(job: SimJob, fence: string): void {
    if (BigInt(fence) < BigInt(job.fence)) return;
    if (BigInt(fence) > BigInt(job.fence)) {
      job.fence = fence;
      job.meterSeq = 0;
      job.reboundAt = Date.now();
      if (job.meteredUntil !== null) job.meteredUntil = job.reboundAt;
      job.log.push(`rebind fence ${fence} ${new Date().toISOString()}`);
    }
    if (job.stopped) return;
    this.#status(job, 'ready', this.#ready(job.sim));
  }

  #ready(sim: Sim): Record<string, unknown> {
    return {
      evidence: { container_running: true },
      access: {
        ssh_port: sim.endpoint.port,
        ssh_host_key_fingerprint: sim.endpoint.fingerprint,
        public_host: sim.endpoint.host,
        ports: [],
      },
    };
  }

  /** One command, applied once (the caller checks command_seq). */
  async apply(sim: Sim, kind: string, body: any): Promise<void> {
    const known = this.byId.get(body.job_id);
    if (kind === 'launch_job') {
      if (known !== undefined) {
        this.#rebind(known, body.fence);
        return;
      }
      const job: SimJob = {
        jobId: body.job_id,
        fence: body.fence,
        sim,
        meteredUntil: null,
        reboundAt: null,
        meterSeq: 0,
        receipts: [],
        stopped: false,
        cleaned: false,
        log: [`launch ${new Date().toISOString()}`],
      };
      this.byId.set(job.jobId, job);
      this.#status(job, 'accepted');
      this.#status(job, 'ready', this.#ready(sim));
    } else if (kind === 'stop_job') {
      if (known === undefined) {
        this.sendReliable(sim, {
          t: 'job_status',
          job_id: body.job_id,
          fence: body.fence,
          status: 'stopped',
          at: new Date().toISOString(),
          detail: 'the job is not on this machine',
        });
        return;
      }
      if (known.stopped) return;
      known.log.push(`stop_job ${new Date().toISOString()}`);
      this.#receipt(known, true);
      known.stopped = true;
      this.#status(known, 'stopped');
    } else if (kind === 'clean_job') {
      if (known === undefined) {
        this.sendReliable(sim, {
          t: 'job_status',
          job_id: body.job_id,
          fence: body.fence,
          status: 'cleaned',
          at: new Date().toISOString(),
        });
        return;
      }
      if (!known.stopped) {
        this.#receipt(known, true);
        known.stopped = true;
      }
      known.cleaned = true;
      this.#status(known, 'cleaned');
    }
  }

  /**
   * The workload saw the job RUNNING: metering starts at its meter_started_at, or at the rebind if the job was lost
   * and taken back before the workload saw it run (the control plane never charges runtime before the rebind; seed
   * 2474494309 in CI sent 8.7 s from the meter start after a rebind, and 7.7 s of it fell before the floor).
   */
  running(jobId: string, meterStartedAt: string): void {
    const job = this.byId.get(jobId);
    if (job !== undefined && job.meteredUntil === null && !job.stopped) {
      job.meteredUntil = Math.max(Date.parse(meterStartedAt), job.reboundAt ?? 0);
      job.log.push(`running (seen ${new Date().toISOString()})`);
    }
  }

  /** The workload saw the job end (CLOSED or FAILED): nothing more is metered for it. */
  finished(jobId: string): void {
    const job = this.byId.get(jobId);
    if (job !== undefined) job.stopped = true;
  }

  /** A receipt for every metering job (every second, connected or not). */
  meterTick(): void {
    for (const job of this.byId.values()) if (!job.stopped && job.meteredUntil !== null) this.#receipt(job, false);
  }

  acknowledged(sim: Sim, upto: number): void {
    for (const job of this.byId.values()) {
      if (job.sim !== sim) continue;
      for (const r of job.receipts) if (r.id <= upto) r.acked = true;
    }
  }

  runningOn(sim: Sim): Array<{ job_id: string; fence: string; container_state: string }> {
    return [...this.byId.values()]
      .filter((job) => job.sim === sim && !job.stopped)
      .slice(0, 64)
      .map((job) => ({ job_id: job.jobId, fence: job.fence, container_state: 'running' }));
  }

  /** The receipts sent for a job (each meter_seq of each fence once), and how many were never acknowledged. */
  sent(jobId: string): {
    runtimeMs: number;
    receipts: Array<{ fence: string; seq: number; runtimeMs: number }>;
    unacked: number;
    detail: string;
  } | null {
    const job = this.byId.get(jobId);
    if (job === undefined) return null;
    return {
      runtimeMs: job.receipts.reduce((sum, r) => sum + r.runtimeMs, 0),
      receipts: job.receipts,
      unacked: job.receipts.filter((r) => !r.acked).length,
      detail: job.log.join(' '),
    };
  }
}
