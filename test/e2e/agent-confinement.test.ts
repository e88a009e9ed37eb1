// A job's container confined to what the renter paid for (issue 24 item 5), on a private dockerd:
//
// - A rental on real processes (`ark-cp serve`, a paired `ark-agent run`) whose job forks without end, then hogs
//   memory: the agent keeps heartbeating and healthy, the job keeps running within its pids and memory limits, and the
//   control plane records the agent's events (pids limit reached, OOM kill).
// - Included quotas, on the JobSupervisor with the real DockerRuntime: a job writing past its included disk, and one
//   sending past its included egress, are stopped by the agent with an event and an 'exited' status that says why.
//
// The fork bomb only starts once the test has seen the container's pids limit in place (it writes the go file after
// checking), so this file can never bomb the machine, whatever the code under test does.
import { randomInt, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileChannelSchema, JobEventMessage, JobStatusMessage, type LaunchJobBody, MeterReceiptMessage } from '@ark/shared';
import {
  type JobChannelPort,
  type JobEventBody,
  type JobMessageBody,
  type JobStatusBody,
  JobSupervisor,
  type JobSupervisorOptions,
} from '@ark/host-agent/jobs/index';
import { DockerRuntime } from '@ark/host-agent/runtime/index';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DockerDaemon, isDockerAvailable, startDockerd } from '../harness/dockerd.js';
import { buildTestImage, type TestImage } from '../harness/images.js';
import { waitFor } from '../harness/processes.js';
import { api } from './host-side-helpers.js';
import { RentalSite } from './rental-helpers.js';

const MIB = 1024 ** 2;
/** What each job may use: ceilings in the agent's config, far under this machine less the reserve. */
const LIMITS = { cpus: 0.5, memory_bytes: 64 * MIB, pids: 64 };
const JOB_LIMITS = { nano_cpus: 500_000_000, memory_bytes: String(64 * MIB), pids: 64 };
/** Limits a launch announces that are wider than the supervisor's own: the supervisor's apply. */
const JOB_LIMITS_WIDE = { nano_cpus: 4_000_000_000, memory_bytes: String(1024 * MIB), pids: 4096 };

/**
 * The job's main process. `bomb` waits for the go file, then forks without end (each process starts another every
 * 50 ms until the stop file appears), then waits for the hog file and reads 256 MiB into one buffer (dd's block).
 * Files in /workspace are the test's handles: it writes them into the volume from the host.
 *
 * While the bomb holds every pid, a fork fails, and a failed fork ends a non-interactive sh (exit 2). So the main
 * process waits on builtins only (`[` and `:`) from the go file until the hog file: were it to run `sleep`, it would
 * die whenever its fork came while the bomb was at the limit, and the job with it (which a loaded machine made likely).
 * Its spinning costs the machine nothing more: the bomb already holds the job's half CPU.
 */
const JOB_SCRIPT = `#!/bin/sh
trap 'exit 0' TERM
bomb() { while [ ! -f /workspace/stop ]; do bomb & sleep 0.05; done; }
if [ "$JOB_MODE" = bomb ]; then
  while [ ! -f /workspace/go ]; do sleep 0.1; done
  # Failed forks say so on stderr, thousands of times a second: not into the container's log.
  bomb 2>/dev/null &
  while [ ! -f /workspace/hog ]; do :; done
  dd if=/dev/zero of=/dev/null bs=256M count=1
  echo "hog ended with $?" > /workspace/hog.done
fi
while :; do sleep 1; done
`;

const checks = {
  job_status: compileChannelSchema(JobStatusMessage),
  meter_receipt: compileChannelSchema(MeterReceiptMessage),
  job_event: compileChannelSchema(JobEventMessage),
};

/** The supervisor's channel port as a recording queue; every message is checked against its wire schema. */
class RecordingChannel implements JobChannelPort {
  readonly messages: JobMessageBody[] = [];
  readonly invalid: string[] = [];
  async enqueue(message: JobMessageBody): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    if (!checks[message.t].Check({ v: 1, sid: 'test', seq: 1, id: 1, ...message })) this.invalid.push(JSON.stringify(message));
    this.messages.push(structuredClone(message));
  }
  ofJob(jobId: string): JobMessageBody[] {
    return this.messages.filter((message) => message.job_id === jobId);
  }
  events(jobId: string): JobEventBody[] {
    return this.ofJob(jobId).filter((message): message is JobEventBody => message.t === 'job_event');
  }
  kinds(jobId: string): string[] {
    return this.events(jobId).map((event) => event.kind);
  }
  lastStatus(jobId: string): JobStatusBody | undefined {
    return this.ofJob(jobId)
      .filter((message): message is JobStatusBody => message.t === 'job_status')
      .at(-1);
  }
}

type HostConfig = {
  NanoCpus: number;
  Memory: number;
  MemorySwap: number;
  PidsLimit: number | null;
  Privileged: boolean;
  SecurityOpt: string[] | null;
  CapDrop: string[] | null;
  CapAdd: string[] | null;
  Runtime: string;
};

describe.skipIf(!isDockerAvailable())('job confinement on a real Docker engine', () => {
  let daemon: DockerDaemon;
  let image: TestImage;
  let runtime: DockerRuntime;

  beforeAll(async () => {
    daemon = await startDockerd();
    image = await buildTestImage(daemon, {
      repository: 'ark-test/confine',
      files: { '/job.sh': { content: JOB_SCRIPT, mode: 0o755 } },
      changes: ['CMD ["/job.sh"]', 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'WORKDIR /workspace'],
    });
    runtime = new DockerRuntime({ socketPath: daemon.socketPath, callTimeoutMs: 20_000 });
  }, 180_000);

  afterAll(async () => {
    await image?.registry.stop();
    await daemon?.stop();
  }, 60_000);

  const hostConfigOf = async (container: string): Promise<HostConfig> => {
    const { stdout } = await daemon.docker(['inspect', '--format', '{{json .HostConfig}}', container]);
    return JSON.parse(stdout) as HostConfig;
  };
  const removeNetwork = async (name: string): Promise<void> => {
    const { stdout } = await daemon.docker(['ps', '--all', '--quiet', '--filter', `network=${name}`]);
    const ids = stdout.split('\n').filter((line) => line.trim() !== '');
    if (ids.length > 0) await daemon.docker(['rm', '--force', ...ids]);
    await daemon.docker(['network', 'rm', name]);
  };
  const volumeOf = async (name: string): Promise<string> =>
    (await daemon.docker(['volume', 'inspect', '--format', '{{.Mountpoint}}', name])).stdout.trim();

  describe('a rental whose job forks without end, then hogs memory', () => {
    let site: RentalSite;

    beforeAll(async () => {
      site = await RentalSite.start(
        'sqlite',
        { daemon, image, stop: async () => undefined },
        {
          agentConfig: { job_limits: LIMITS, job_check_interval_s: 1, job_disk_check_interval_s: 1 },
        },
      );
    }, 180_000);

    afterAll(async () => {
      await site?.stop();
    }, 60_000);

    /** The machine as its host sees it: last heartbeat, liveness, health. */
    const machine = async () =>
      (await api(site.cp.base, 'GET', `/api/v1/hosts/machines/${site.machineId}`, { token: site.hostToken })).body as {
        last_heartbeat_at: string;
        liveness: string;
        healthy: boolean;
      };
    /** Heartbeats arrive (one a second here) and say healthy, over `ms` of whatever the job is doing. */
    const expectHeartbeating = async (ms: number) => {
      const before = await machine();
      await new Promise((resolve) => setTimeout(resolve, ms));
      const after = await machine();
      expect(after).toMatchObject({ liveness: 'online', healthy: true });
      expect(Date.parse(after.last_heartbeat_at) - Date.parse(before.last_heartbeat_at)).toBeGreaterThanOrEqual(ms - 1_500);
      expect(site.agent?.isRunning()).toBe(true);
    };
    const eventOf = async (jobId: string, kind: string) => (await site.events(jobId)).find((event) => event.kind === kind);

    it('keeps the agent heartbeating and the job within its pids, then its memory, with an event each', { timeout: 300_000 }, async () => {
      // The offer shows what a job may use here: the agent's ceilings, from its manifest.
      const offers = await site.renter('GET', '/api/v1/offers?limit=100');
      expect((offers.body.items as any[]).find((item) => item.machine_id === site.machineId)?.job_limits).toEqual(JOB_LIMITS);

      const { jobId } = await site.reserve({ budgetMicro: 5_000_000n, env: { JOB_MODE: 'bomb' } });
      const running = await site.waitState(jobId, 'RUNNING');
      expect(running.state).toBe('RUNNING');
      const container = `ark-job-${jobId}`;
      // The guard: nothing forks until the limits are seen in place.
      const hostConfig = await hostConfigOf(container);
      expect(hostConfig).toMatchObject({
        NanoCpus: 500_000_000,
        Memory: 64 * MIB,
        MemorySwap: 64 * MIB,
        PidsLimit: 64,
        Privileged: false,
        SecurityOpt: ['no-new-privileges:true'],
        CapDrop: ['ALL'],
      });
      // The engine may write them with the CAP_ prefix.
      expect(hostConfig.CapAdd?.map((cap) => cap.replace(/^CAP_/, '')).sort()).toEqual([
        'CHOWN',
        'DAC_OVERRIDE',
        'FOWNER',
        'FSETID',
        'KILL',
        'NET_BIND_SERVICE',
        'SETGID',
        'SETUID',
      ]);
      const started = (await site.events(jobId)).find((event) => event.kind === 'state_changed' && event.data.to === 'RUNNING');
      expect(started?.data.evidence).toMatchObject({ isolation: 'runc', limit_pids: 64, limit_nano_cpus: 500_000_000 });
      const id = (await site.agentJobRecord(jobId)).container_id as string;
      const volume = await volumeOf(container);

      await writeFile(join(volume, 'go'), '');
      // The bomb fills the container up to its limit and no further.
      const peak = await waitFor(
        async () => {
          const pids = (await runtime.containerUsage(id))?.pids ?? 0;
          expect(pids).toBeLessThanOrEqual(64);
          return pids >= 60 ? pids : undefined;
        },
        // A loaded 2-core machine forks slowly: the job has half a CPU.
        { timeoutMs: 60_000, intervalMs: 200, description: 'the fork bomb at the pids limit' },
      );
      expect(peak).toBeLessThanOrEqual(64);
      await expectHeartbeating(4_000);
      // The agent reports it from its next limits check, which the same loaded engine answers late.
      const pidsEvent = await waitFor(() => eventOf(jobId, 'pids_limit_reached'), {
        timeoutMs: 60_000,
        intervalMs: 250,
        description: 'the pids_limit_reached event',
      });
      expect(pidsEvent?.data).toMatchObject({ pids_limit: 64 });
      // The job is still there to read: its main process did not die of a failed fork (see JOB_SCRIPT).
      const pidsNow = await waitFor(async () => (await runtime.containerUsage(id))?.pids, {
        timeoutMs: 10_000,
        intervalMs: 200,
        description: 'a pids reading',
      });
      expect(pidsNow).toBeLessThanOrEqual(64);
      expect((await site.job(jobId)).state).toBe('RUNNING');

      // The bomb ends; the hog reads 256 MiB into one buffer under a limit of 64 MiB.
      await writeFile(join(volume, 'stop'), '');
      await waitFor(async () => ((await runtime.containerUsage(id))?.pids ?? 99) < 10, {
        timeoutMs: 30_000,
        intervalMs: 200,
        description: 'the fork bomb to end',
      });
      await writeFile(join(volume, 'hog'), '');
      const oomEvent = await waitFor(() => eventOf(jobId, 'oom_kill'), {
        timeoutMs: 30_000,
        intervalMs: 250,
        description: 'the oom_kill event',
      });
      expect(oomEvent?.data).toMatchObject({ memory_limit_bytes: String(64 * MIB) });
      // dd was killed (SIGKILL: 137), the job's main process lives on, and so does the agent.
      await waitFor(async () => (await readText(join(volume, 'hog.done')))?.trim(), {
        timeoutMs: 10_000,
        intervalMs: 100,
        description: 'the hog to end',
      });
      expect(await readText(join(volume, 'hog.done'))).toBe('hog ended with 137\n');
      expect((await runtime.containerUsage(id))?.memoryBytes ?? 0).toBeLessThanOrEqual(64 * MIB);
      await expectHeartbeating(3_000);
      expect((await site.job(jobId)).state).toBe('RUNNING');
      expect(await site.agentStatus()).toMatchObject({ daemon: { running: true }, report: { healthy: true, problems: [] } });

      await site.stopAndClose(jobId);
    });
  });

  describe('included quotas, on the supervisor', () => {
    let stateRoot: string;
    let network: { name: string; subnet: string } | undefined;
    const channels: RecordingChannel[] = [];

    beforeAll(async () => {
      stateRoot = await mkdtemp(join(tmpdir(), 'ark-confine-'));
    });

    afterAll(async () => {
      for (const channel of channels) expect(channel.invalid).toEqual([]);
      // A network's bridge outlives its dockerd (it stays on the host): removed here, every container on it first.
      if (network !== undefined) await removeNetwork(network.name);
      await rm(stateRoot, { recursive: true, force: true });
    }, 60_000);

    async function supervisor(extra: Partial<JobSupervisorOptions>): Promise<{ supervisor: JobSupervisor; channel: RecordingChannel }> {
      const channel = new RecordingChannel();
      channels.push(channel);
      const first = 20_000 + randomInt(20_000);
      const instance = new JobSupervisor({
        stateDir: join(stateRoot, randomUUID()),
        runtime,
        channel,
        portRange: { first, last: first + 49 },
        networkMode: 'host',
        sshBindHost: '127.0.0.1',
        stopGraceS: 1,
        readinessTimeoutMs: 20_000,
        readinessIntervalMs: 50,
        exitWatchIntervalMs: 100,
        pullProgressIntervalMs: 0,
        jobLimits: { nano_cpus: 1_000_000_000, memory_bytes: String(256 * MIB), pids: 256 },
        confinementCheckIntervalMs: 200,
        diskCheckIntervalMs: 200,
        ...(process.env.ARK_TEST_DEBUG ? { logger: { info: console.info, warn: console.warn, error: console.error } } : {}),
        ...extra,
      });
      await instance.start();
      return { supervisor: instance, channel };
    }

    const launchBody = (command: string, overrides: Partial<LaunchJobBody>): LaunchJobBody => ({
      job_id: randomUUID(),
      fence: '1',
      image_digest: image.digestRef,
      gpu_pci_addresses: [],
      env: {},
      command: ['sh', '-c', command],
      ports: [],
      ssh_public_keys: [],
      meter_interval_s: 1,
      limits: JOB_LIMITS_WIDE,
      ...overrides,
    });

    it('stops a job that writes past its included disk, volume and writable layer together', { timeout: 60_000 }, async () => {
      const { supervisor: jobs, channel } = await supervisor({});
      // 3 MiB over the image and 4.5 MiB in the volume: past 90% of 8 MiB; then 4 MiB more, past it.
      const body = launchBody(
        'dd if=/dev/zero of=/layer.bin bs=1M count=3 && dd if=/dev/zero of=/workspace/a.bin bs=512k count=9 && sleep 2 && ' +
          'dd if=/dev/zero of=/workspace/b.bin bs=1M count=4; while :; do sleep 1; done',
        { included_disk_bytes: String(8 * MIB) },
      );
      try {
        await jobs.handleCommand({ kind: 'launch_job', body });
        await waitFor(() => channel.lastStatus(body.job_id)?.status === 'exited', {
          timeoutMs: 40_000,
          intervalMs: 50,
          description: 'the job stopped for its disk',
        });
        expect(channel.kinds(body.job_id)).toEqual(['disk_quota_warning', 'disk_quota_exceeded']);
        const [warning, exceeded] = channel.events(body.job_id);
        expect(warning?.data).toMatchObject({ writable_layer_bytes: expect.any(Number), included_disk_bytes: String(8 * MIB) });
        expect(Number(exceeded?.data.used_bytes)).toBeGreaterThan(8 * MIB);
        expect(channel.lastStatus(body.job_id)?.detail).toMatch(
          /^the agent stopped the container: it went past its included disk of 8\.0 MiB/,
        );
        expect((await runtime.inspectContainer(`ark-job-${body.job_id}`))?.running).toBe(false);
        expect(jobs.job(body.job_id)?.confinement).toMatchObject({ stopped_for: 'disk', disk_warned: true });
      } finally {
        await jobs.close();
      }
    });

    it('stops a job that sends past its included egress, counted on its own interface', { timeout: 60_000 }, async () => {
      // An internal network (no route out; this dockerd sets no iptables rules) with a receiver on it: the job's
      // container gets an interface of its own, whose counters the engine reports.
      const subnet = `10.${200 + randomInt(50)}.${randomInt(256)}`;
      network = { name: `ark-egress-${randomUUID().slice(0, 8)}`, subnet };
      await daemon.docker(['network', 'create', '--internal', '--subnet', `${subnet}.0/24`, network.name]);
      await daemon.docker([
        'run',
        '--detach',
        '--name',
        'ark-egress-receiver',
        '--network',
        network.name,
        '--ip',
        `${subnet}.2`,
        image.digestRef,
        'sh',
        '-c',
        // busybox nc ends the connection when its own input ends: input from a pipe that never ends keeps it reading.
        'sleep 100000 | nc -l -p 9000 > /dev/null',
      ]);
      const { supervisor: jobs, channel } = await supervisor({ networkMode: 'bridge', network: network.name, publishHost: '127.0.0.1' });
      // 64 KiB every 100 ms (slow enough for a reading between 90% and 100%), up to 20 MiB; the job may send 4 MiB.
      const body = launchBody(
        `sleep 1; i=0; while [ $i -lt 320 ]; do dd if=/dev/zero bs=64k count=1 2>/dev/null; sleep 0.1; i=$((i+1)); done | nc ${subnet}.2 9000; while :; do sleep 1; done`,
        { included_egress_bytes: String(4 * MIB) },
      );
      try {
        await jobs.handleCommand({ kind: 'launch_job', body });
        await waitFor(() => channel.lastStatus(body.job_id)?.status === 'exited', {
          timeoutMs: 40_000,
          intervalMs: 50,
          description: 'the job stopped for its egress',
        }).catch(async (error: Error) => {
          const usage = await runtime.containerUsage(`ark-job-${body.job_id}`).catch(String);
          throw new Error(`${error.message}; usage ${JSON.stringify(usage)}; events ${JSON.stringify(channel.events(body.job_id))}`);
        });
        expect(channel.kinds(body.job_id)).toEqual(['egress_quota_warning', 'egress_quota_exceeded']);
        const sent = Number(channel.events(body.job_id).find((event) => event.kind === 'egress_quota_exceeded')?.data.used_bytes);
        // Past the quota, and stopped long before the 20 MiB it would have sent (a busy engine answers its stats late).
        expect(sent).toBeGreaterThan(4 * MIB);
        expect(sent).toBeLessThan(12 * MIB);
        expect(channel.lastStatus(body.job_id)?.detail).toMatch(
          /^the agent stopped the container: it went past its included egress of 4\.0 MiB/,
        );
        expect((await runtime.inspectContainer(`ark-job-${body.job_id}`))?.running).toBe(false);
      } finally {
        await jobs.close();
      }
    });
  });
});

async function readText(path: string): Promise<string | undefined> {
  return readFile(path, 'utf8').catch(() => undefined);
}
