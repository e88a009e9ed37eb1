// What the supervisor's unit tests share: a ManualClock, the recorded Docker double, a channel that
// records what it is handed (checked against the wire schema), a temporary state directory, and
// builders for launch bodies and for jobs already in a given phase.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileChannelSchema, JobEventMessage, JobStatusMessage, type LaunchJobBody, ManualClock, MeterReceiptMessage } from '@ark/shared';
import { generateHostKey } from '../../access/host-key.js';
import { RecordedContainerRuntime } from '../../runtime/testing/recorded-container-runtime.js';
import { createJobContext, type JobContext, type JobSupervisorOptions, type LiveJob, liveJob } from '../job-context.js';
import {
  JOB_RECORD_VERSION,
  type JobChannelPort,
  type JobEventBody,
  type JobMessageBody,
  type JobRecord,
  type JobStatusBody,
  type MeterReceiptBody,
} from '../job-record.js';

const statusCheck = compileChannelSchema(JobStatusMessage);
const receiptCheck = compileChannelSchema(MeterReceiptMessage);
const eventCheck = compileChannelSchema(JobEventMessage);
const checkOf = (t: JobMessageBody['t']) => (t === 'job_status' ? statusCheck : t === 'job_event' ? eventCheck : receiptCheck);

export const T0 = '2030-01-01T00:00:00.000Z';
/** Milliseconds after T0, as the ISO string the agent writes. */
export const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

export const renterKey = generateHostKey();

/** The channel port as the agent's client behaves: asynchronous, refusing while down, in order. */
export class RecordingJobChannel implements JobChannelPort {
  readonly messages: JobMessageBody[] = [];
  /** Messages that do not match the wire schema (expected to stay empty). */
  readonly invalid: string[] = [];
  down = false;

  async enqueue(message: JobMessageBody): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    if (this.down) throw new Error('the channel is not running');
    const wire = { v: 1, sid: 'test', seq: 1, id: 1, ...message };
    if (!checkOf(message.t).Check(wire)) this.invalid.push(JSON.stringify(message));
    this.messages.push(structuredClone(message));
  }

  statuses(jobId?: string): JobStatusBody[] {
    return this.messages.filter((m): m is JobStatusBody => m.t === 'job_status' && (jobId === undefined || m.job_id === jobId));
  }

  receipts(jobId?: string): MeterReceiptBody[] {
    return this.messages.filter((m): m is MeterReceiptBody => m.t === 'meter_receipt' && (jobId === undefined || m.job_id === jobId));
  }

  events(jobId?: string): JobEventBody[] {
    return this.messages.filter((m): m is JobEventBody => m.t === 'job_event' && (jobId === undefined || m.job_id === jobId));
  }

  /** Statuses, receipts and events in the order handed over, as short words: `ready`, `receipt 2 final`, `oom_kill`. */
  story(jobId?: string): string[] {
    return this.messages
      .filter((m) => jobId === undefined || m.job_id === jobId)
      .map((m) => (m.t === 'job_status' ? m.status : m.t === 'job_event' ? m.kind : `receipt ${m.meter_seq}${m.final ? ' final' : ''}`));
  }
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** Polls `probe` on real time (I/O, not the clock) until it holds. */
export async function until(probe: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

export type JobKit = {
  clock: ManualClock;
  runtime: RecordedContainerRuntime;
  channel: RecordingJobChannel;
  stateDir: string;
  /** Supervisor options over the kit's parts (overrides applied). */
  options: JobSupervisorOptions;
  /** A fresh context over the kit, for driving one part alone. */
  context(): JobContext;
  launchBody(overrides?: Partial<LaunchJobBody>): LaunchJobBody;
  /**
   * A job whose container already runs (created and started in the double at the current time) and whose
   * record says `ready` with the meter started now; added to `context.jobs`.
   */
  readyJob(context: JobContext, overrides?: Partial<LaunchJobBody>): Promise<LiveJob>;
  cleanup(): Promise<void>;
};

export async function createJobKit(overrides: Partial<JobSupervisorOptions> & { volumes?: boolean } = {}): Promise<JobKit> {
  const { volumes, ...supervisorOverrides } = overrides;
  const stateDir = await mkdtemp(join(tmpdir(), 'ark-jobs-'));
  const clock = new ManualClock(T0);
  const runtime = new RecordedContainerRuntime({ clock, ...(volumes === true ? { volumeRoot: join(stateDir, 'volumes') } : {}) });
  const channel = new RecordingJobChannel();
  const first = 30_000 + Math.floor(Math.random() * 20_000);
  const options: JobSupervisorOptions = {
    stateDir,
    runtime,
    channel,
    clock,
    portRange: { first, last: first + 49 },
    networkMode: 'host',
    sshBindHost: '127.0.0.1',
    ...supervisorOverrides,
  };
  const launchBody = (body: Partial<LaunchJobBody> = {}): LaunchJobBody => ({
    job_id: randomUUID(),
    fence: '1',
    image_digest: runtime.answers.image.reference,
    gpu_pci_addresses: [],
    env: { SECRET_TOKEN: 'do-not-leak-this' },
    command: ['sh', '-c', 'echo started; exec sleep 300'],
    ports: [],
    ssh_public_keys: [`${renterKey.publicKey} renter@laptop`],
    meter_interval_s: 30,
    ...body,
  });
  return {
    clock,
    runtime,
    channel,
    stateDir,
    options,
    context: () => createJobContext(options),
    launchBody,
    readyJob: async (context, body = {}) => {
      const launch = launchBody(body);
      const name = `ark-job-${launch.job_id}`;
      await runtime.ensureVolume(name, {});
      const id = await runtime.createContainer({
        name,
        image: launch.image_digest,
        labels: { 'ark.job_id': launch.job_id, 'ark.fence': launch.fence, 'ark.managed-by': 'ark-agent' },
        env: launch.env,
        volumeName: name,
        volumeMountPath: '/workspace',
        networkMode: 'host',
        portBindings: [],
        gpuDeviceIds: [],
      });
      await runtime.startContainer(id);
      const now = clock.now().toISOString();
      const record: JobRecord = {
        version: JOB_RECORD_VERSION,
        job_id: launch.job_id,
        fence: launch.fence,
        phase: 'ready',
        launch,
        accepted_at: now,
        updated_at: now,
        container_name: name,
        volume_name: name,
        container_id: id,
        ssh_port: await closedPort(),
        ports: [],
        probe_ports: [],
        ready_at: now,
        evidence: { container_running: true },
        meter: { seq: 0, period_end: now, final_sent: false },
        outbox: [],
      };
      const job = liveJob(record);
      context.jobs.set(record.job_id, job);
      await context.store.save(record);
      return job;
    },
    cleanup: () => rm(stateDir, { recursive: true, force: true }),
  };
}
