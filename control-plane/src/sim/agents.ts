import type {
  CleanJobBody,
  HeartbeatMessage,
  JobStatusMessage,
  LaunchJobBody,
  MeterReceiptMessage,
  ReliableAgentMessage,
  StopJobBody,
} from '@ark/shared';
import { commandsAfter } from '../store/outbox.js';
import type { World } from './world.js';

// Simulated host agents. Each behaves as host-agent/src/jobs does, reduced to what the control plane sees over the
// channel: it takes its machine's queued commands in order (launch_job, stop_job, clean_job), reports job status,
// sends a meter receipt for the runtime since its last one, the final receipt before `stopped`, and heartbeats that
// list its running containers. Its reliable messages go out in order and are kept while it is away (vanished), then
// sent on return, as the real agent's outbox does. An agent outlives a control-plane crash (it is another process).

const ACCESS = {
  ssh_port: 2222,
  ssh_host_key_fingerprint: 'SHA256:2mjI0vU4aW7eMvZxEu2Zb8bNf7v7mTdPq5mJQfR2bS8',
  ports: [{ container_port: 8080, host_port: 31080, protocol: 'http' as const }],
};

interface AgentJob {
  fence: bigint;
  phase: 'running' | 'stopped' | 'cleaned';
  /** The last receipt's meter_seq under the current fence. */
  meterSeq: number;
  /** Where the next receipt's period starts. */
  meterFrom: Date;
}

/** What the agent reported about one job's runtime, for the model's "charged at most what ran" check. */
export interface ReportedRuntime {
  /** Runtime of every distinct receipt the agent made for the job (each period once, across fences). */
  runtimeMs: bigint;
  /** The agent sent the job's final receipt (before its `stopped`). */
  finalSent: boolean;
}

export class SimAgent {
  readonly machineId: string;
  present = true;
  readonly reported = new Map<string, ReportedRuntime>();
  readonly #jobs = new Map<string, AgentJob>();
  #nextMessageId = 1;
  #commandCursor = 0;
  /** Reliable messages not yet applied (the agent is away, or they were made while it was). */
  #queue: ReliableAgentMessage[] = [];
  /** The last reliable message sent, for a resend (a lost ack). */
  #lastSent: ReliableAgentMessage | null = null;
  readonly #meterIntervalMs: number;

  constructor(machineId: string, meterIntervalS: number) {
    this.machineId = machineId;
    this.#meterIntervalMs = meterIntervalS * 1000;
  }

  /**
   * One turn of the agent while present: send what waits, heartbeat, take new commands, meter. Away, it only lets
   * time pass (its containers keep running: it lost its connection, not its machine).
   */
  async turn(world: World): Promise<void> {
    if (!this.present) return;
    await this.flush(world);
    await world.heartbeat(this.machineId, this.#heartbeat(world.clock.now()));
    const commands = await commandsAfter(world.store.db, this.machineId, this.#commandCursor, 100);
    for (const command of commands) {
      this.#commandCursor = command.commandSeq;
      const now = world.clock.now();
      if (command.kind === 'launch_job') this.#launch(command.body as LaunchJobBody, now);
      else if (command.kind === 'stop_job') this.#stop(command.body as StopJobBody, now);
      else if (command.kind === 'clean_job') this.#clean(command.body as CleanJobBody, now);
    }
    const now = world.clock.now();
    for (const [jobId, job] of this.#jobs) {
      if (job.phase === 'running' && now.getTime() - job.meterFrom.getTime() >= this.#meterIntervalMs)
        this.#receipt(jobId, job, now, false);
    }
    await this.flush(world);
  }

  /** Sends every queued message in order, each applied once by the gateway's applier. */
  async flush(world: World): Promise<void> {
    while (this.present && this.#queue.length > 0) {
      const msg = this.#queue[0] as ReliableAgentMessage;
      await world.deliver(this.machineId, msg);
      this.#lastSent = msg;
      this.#queue.shift();
    }
  }

  /**
   * The last message again, as after a lost acknowledgement (the same message id: the gateway applies it once), or
   * under a new message id (the receipt rules must see the same meter_seq as a repeat): either way nothing changes.
   */
  async resend(world: World, freshId: boolean): Promise<boolean> {
    if (!this.present || this.#lastSent === null) return false;
    await world.deliver(this.machineId, freshId ? { ...this.#lastSent, id: this.#nextMessageId++ } : this.#lastSent);
    return true;
  }

  #launch(body: LaunchJobBody, now: Date): void {
    const known = this.#jobs.get(body.job_id);
    const fence = BigInt(body.fence);
    if (known && known.phase === 'running') {
      // A rebind after a reconciliation: adopt the new fence and restart the meter sequence.
      known.fence = fence;
      known.meterSeq = 0;
      known.meterFrom = now;
      this.#status(body.job_id, fence, 'ready', now);
      return;
    }
    if (known) return;
    this.#jobs.set(body.job_id, { fence, phase: 'running', meterSeq: 0, meterFrom: now });
    this.reported.set(body.job_id, { runtimeMs: 0n, finalSent: false });
    this.#status(body.job_id, fence, 'accepted', now);
    this.#status(body.job_id, fence, 'ready', now);
  }

  #stop(body: StopJobBody, now: Date): void {
    const job = this.#jobs.get(body.job_id);
    const fence = BigInt(body.fence);
    if (!job) {
      // Stopped before the agent launched it: the real agent answers for a job it does not have.
      this.#status(body.job_id, fence, 'stopped', now);
      return;
    }
    if (job.phase !== 'running') return;
    job.fence = fence > job.fence ? fence : job.fence;
    this.#receipt(body.job_id, job, now, true);
    job.phase = 'stopped';
    this.#status(body.job_id, job.fence, 'stopped', now);
  }

  #clean(body: CleanJobBody, now: Date): void {
    const job = this.#jobs.get(body.job_id);
    if (job) job.phase = 'cleaned';
    this.#status(body.job_id, BigInt(body.fence), 'cleaned', now);
  }

  #receipt(jobId: string, job: AgentJob, now: Date, final: boolean): void {
    job.meterSeq += 1;
    const runtimeMs = BigInt(now.getTime() - job.meterFrom.getTime());
    const msg: MeterReceiptMessage = {
      ...this.#base(),
      t: 'meter_receipt',
      job_id: jobId,
      fence: job.fence.toString(),
      meter_seq: job.meterSeq,
      period_start: job.meterFrom.toISOString(),
      period_end: now.toISOString(),
      runtime_ms: runtimeMs.toString(),
      final,
    };
    job.meterFrom = now;
    const reported = this.reported.get(jobId);
    if (reported) {
      reported.runtimeMs += runtimeMs;
      if (final) reported.finalSent = true;
    }
    this.#queue.push(msg);
  }

  #status(jobId: string, fence: bigint, status: JobStatusMessage['status'], now: Date): void {
    const msg: JobStatusMessage = {
      ...this.#base(),
      t: 'job_status',
      job_id: jobId,
      fence: fence.toString(),
      status,
      at: now.toISOString(),
    };
    if (status === 'ready') {
      msg.access = ACCESS;
      msg.evidence = { container_running: true };
    }
    this.#queue.push(msg);
  }

  #heartbeat(now: Date): HeartbeatMessage {
    return {
      v: 1,
      t: 'heartbeat',
      sid: 'sim',
      seq: 1,
      at: now.toISOString(),
      uptime_s: 100,
      healthy: true,
      problems: [],
      running_jobs: [...this.#jobs]
        .filter(([, j]) => j.phase === 'running')
        .map(([id, j]) => ({ job_id: id, fence: j.fence.toString(), container_state: 'running' })),
    };
  }

  #base() {
    return { v: 1 as const, sid: 'sim', seq: 1, id: this.#nextMessageId++ };
  }
}
