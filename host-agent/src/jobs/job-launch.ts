// Launch and readiness: accepted, pulling (by digest), starting (volume, container, ports, SSH) and
// ready once readiness is verified, when the meter starts. A launch can be resumed from any of its
// phases after a restart; a stop, clean or close aborts it and decides what happens next. A launch
// that cannot complete stops the container at once (nothing runs unpaid) and reports failed.
import { engineContainerPort } from './engine-relay.js';
import type { LaunchJobBody } from '@ark/shared';
import type { ContainerLimits, ContainerState, EngineIsolation } from '../runtime/container-runtime.js';
import { gpuDeviceIds } from '../runtime/gpu-devices.js';
import { formatDigestReference, parseDigestReference } from '../runtime/image-reference.js';
import { PortAllocator } from '../runtime/port-allocator.js';
import type { JobAccessListener } from './job-access.js';
import {
  FAILURE_LOG_BYTES,
  FAILURE_LOG_LINES,
  hostKeys,
  JOB_LABEL,
  type JobContext,
  type LiveJob,
  VOLUME_MOUNT_PATH,
} from './job-context.js';
import type { JobMetering } from './job-metering.js';
import { jobAccess, jobDetail } from './job-outbox.js';
import { chooseIsolation, containerLimitsOf, effectiveLimits } from './job-limits.js';
import { enterPhase } from './job-phase.js';
import type { JobEvidence, PublishedPort } from './job-record.js';
import { checkReadiness, NotReadyError, type ReadinessPlan } from './readiness.js';
import { errorText } from './text.js';

export class LaunchFailure extends Error {
  constructor(
    message: string,
    readonly exitCode?: number,
  ) {
    super(message);
    this.name = 'LaunchFailure';
  }
}

/** How long what the engine offers (its runtimes, a user-namespace remap) is taken as known. */
const ENGINE_ISOLATION_TTL_MS = 5 * 60_000;

export class JobLaunch {
  private readonly ports: PortAllocator;
  private engine: { isolation: EngineIsolation; readAtMs: number } | undefined;

  constructor(
    private readonly context: JobContext,
    private readonly access: JobAccessListener,
    private readonly metering: JobMetering,
  ) {
    const { settings } = context;
    const probeHosts = settings.networkMode === 'bridge' ? [settings.sshBindHost, settings.publishHost] : [settings.sshBindHost];
    this.ports = new PortAllocator({ range: settings.portRange, probeHosts: [...new Set(probeHosts)] });
  }

  /** Runs (or resumes) the job's launch in the background; job.launch holds its abort and its end. */
  start(job: LiveJob): void {
    const controller = new AbortController();
    const done = this.run(job, controller.signal).catch((error: unknown) =>
      this.context.logger.error({ job_id: job.record.job_id, error: errorText(error) }, 'launch crashed'),
    );
    job.launch = { controller, done };
    void done.finally(() => {
      if (job.launch?.done === done) job.launch = undefined;
    });
  }

  private async run(job: LiveJob, signal: AbortSignal): Promise<void> {
    const { clock, logger, outbox, runtime, settings, store } = this.context;
    const record = job.record;
    const launch = record.launch;
    if (launch === undefined) return;
    try {
      const reference = parseDigestReference(launch.image_digest);
      if (reference === undefined) throw new LaunchFailure(`image ${launch.image_digest.slice(0, 200)} is not named by a sha256 digest`);
      const image = formatDigestReference(reference);
      if (record.phase === 'accepted' || record.phase === 'pulling') {
        await this.pull(job, image, signal);
        enterPhase(record, 'image_ready');
        await outbox.commit(job, [outbox.status(record, 'starting')]);
      }
      if (signal.aborted) return;
      // Before anything runs: the GPUs this job was assigned are the ones nvidia-smi lists now (a signed receipt).
      // A failed check is a launch failure: the job fails before RUNNING (launch_failed), its meter never started, so
      // nothing was charged and no automatic credit is owed (control-plane domain/earnings/credits.ts).
      if (record.container_id === undefined && settings.startCheck !== undefined) {
        const problem = await settings.startCheck(record.job_id, launch.gpu_pci_addresses);
        if (problem !== undefined) throw new LaunchFailure(problem);
        if (signal.aborted) return;
      }
      const deviceIds = await this.deviceIds(launch.gpu_pci_addresses);
      await this.assignPorts(job);
      const hostKey = await (await hostKeys()).loadOrCreateHostKey(store.hostKeyPath(record.job_id));
      record.ssh_host_key_fingerprint = hostKey.fingerprint;
      if (signal.aborted) return;
      const labels = { [JOB_LABEL]: record.job_id, 'ark.fence': record.fence, 'ark.managed-by': 'ark-agent' };
      await runtime.ensureVolume(record.volume_name, labels);
      let state = await runtime.inspectContainer(record.container_name);
      if (state === undefined) {
        const env = { ...launch.env };
        // Model engines read their per-job key from here unless the template already wires it.
        if (launch.engine_api_key !== undefined) env.ARK_ENGINE_API_KEY ??= launch.engine_api_key;
        const bindings = [...(record.ports ?? []), ...(record.probe_ports ?? [])].map((port) => ({
          containerPort: port.container_port,
          hostPort: port.host_port,
          hostIp: (record.probe_ports ?? []).includes(port) ? settings.probeHost : settings.publishHost,
        }));
        const confinement = await this.confine(job);
        record.container_id = await runtime.createContainer({
          ...confinement,
          name: record.container_name,
          image,
          labels,
          env,
          ...(launch.command !== undefined ? { command: launch.command } : {}),
          volumeName: record.volume_name,
          volumeMountPath: VOLUME_MOUNT_PATH,
          networkMode: settings.networkMode,
          portBindings: bindings,
          gpuDeviceIds: deviceIds,
          ...(settings.network !== undefined ? { networkName: settings.network } : {}),
        });
        await outbox.commit(job);
        state = await runtime.inspectContainer(record.container_id);
      }
      if (state === undefined) throw new LaunchFailure('the container vanished right after it was created');
      record.container_id = state.id;
      if (signal.aborted) return;
      if (state.status === 'created') await runtime.startContainer(state.id);
      else if (!state.running) throw await this.exitedEarly(job, state);
      job.containerState = 'running';
      // The container's output is kept from its first line (job-logs.ts).
      this.context.logs.attach(job);
      await this.access.ensure(job, this.access.executionMode(job));
      const startedAtMs = clock.now().getTime();
      const evidence = await this.waitReady(job, signal);
      if (signal.aborted) return;
      evidence.readiness_ms = clock.now().getTime() - startedAtMs;
      if (record.confinement !== undefined) {
        // What the renter's container is confined to, on the record of its readiness.
        evidence.isolation = record.confinement.isolation;
        evidence.limit_nano_cpus = record.confinement.limits.nano_cpus;
        evidence.limit_memory_bytes = record.confinement.limits.memory_bytes;
        evidence.limit_pids = record.confinement.limits.pids;
      }
      const now = clock.now().toISOString();
      enterPhase(record, 'readiness_verified');
      record.ready_at = now;
      record.evidence = evidence;
      record.meter = { seq: 0, period_end: now, final_sent: false };
      // The ready status carries the meter start itself as its time.
      await outbox.commit(job, [outbox.status(record, 'ready', { at: now, evidence, access: jobAccess(record) })]);
      logger.info({ job_id: record.job_id, evidence }, 'job ready');
      this.metering.schedule(job);
    } catch (error) {
      // A stop, clean or close took over; they decide what happens next.
      if (signal.aborted) return;
      await this.fail(job, error);
    }
  }

  /**
   * The job's limits (this agent's own, or the launch's when lower; none when neither is known) and its runtime
   * (job-limits.ts), recorded before the container is created with them.
   */
  private async confine(job: LiveJob): Promise<{ limits?: ContainerLimits; runtime?: string }> {
    const { settings } = this.context;
    const record = job.record;
    const announced = record.launch?.limits;
    const limits = settings.jobLimits === undefined ? announced : effectiveLimits(settings.jobLimits, announced);
    if (limits === undefined) return {};
    let isolation: ReturnType<typeof chooseIsolation>;
    try {
      isolation = chooseIsolation(settings.jobRuntime, await this.engineIsolation());
    } catch (error) {
      throw new LaunchFailure(errorText(error));
    }
    record.confinement = { limits, isolation: isolation.description };
    await this.context.outbox.commit(job);
    return { limits: containerLimitsOf(limits), ...(isolation.runtime !== undefined ? { runtime: isolation.runtime } : {}) };
  }

  private async engineIsolation(): Promise<EngineIsolation> {
    const nowMs = this.context.clock.now().getTime();
    if (this.engine === undefined || nowMs - this.engine.readAtMs >= ENGINE_ISOLATION_TTL_MS) {
      this.engine = { isolation: await this.context.runtime.engineIsolation(), readAtMs: nowMs };
    }
    return this.engine.isolation;
  }

  private async pull(job: LiveJob, image: string, signal: AbortSignal): Promise<void> {
    const { clock, outbox, runtime, settings } = this.context;
    const record = job.record;
    if (record.phase === 'accepted') {
      enterPhase(record, 'pull_started');
      await outbox.commit(job, [outbox.status(record, 'pulling', { progress_pct: 0 })]);
    }
    const intervalMs = settings.pullProgressIntervalMs;
    let reported = 0;
    let reportedAt = clock.now().getTime();
    let progress = Promise.resolve();
    await runtime.pullImage(image, {
      signal,
      onProgress: (percent) => {
        // At most one per interval, only when it grew, and 100 only once the image is verified.
        if (percent <= reported || percent >= 100 || clock.now().getTime() - reportedAt < intervalMs) return;
        reported = percent;
        reportedAt = clock.now().getTime();
        progress = progress
          .then(() => outbox.commit(job, [outbox.status(record, 'pulling', { progress_pct: percent })]))
          .catch(() => undefined);
      },
    });
    await progress;
    if (signal.aborted) return;
    await outbox.commit(job, [outbox.status(record, 'pulling', { progress_pct: 100 })]);
  }

  private async deviceIds(pciAddresses: readonly string[]): Promise<string[]> {
    if (pciAddresses.length === 0) return [];
    const inventory = this.context.settings.gpuInventory;
    if (inventory === undefined) throw new LaunchFailure('GPUs were assigned but this agent has no GPU inventory');
    try {
      return gpuDeviceIds(pciAddresses, await inventory.inventory());
    } catch (error) {
      throw new LaunchFailure(errorText(error));
    }
  }

  /** Chooses the SSH port (and with bridge networking the published ports) once, and persists them. */
  private async assignPorts(job: LiveJob): Promise<void> {
    const record = job.record;
    const launch = record.launch;
    if (record.ssh_port !== undefined || launch === undefined) return;
    const bridge = this.context.settings.networkMode === 'bridge';
    const healthPort = launch.health_check?.port;
    const needsProbePort = bridge && healthPort !== undefined && !launch.ports.some((port) => port.container_port === healthPort);
    const taken = new Set<number>();
    for (const other of this.context.jobs.values()) {
      if (other === job || other.record.phase === 'cleaned') continue;
      for (const port of [
        other.record.ssh_port,
        ...(other.record.ports ?? []).map((p) => p.host_port),
        ...(other.record.probe_ports ?? []).map((p) => p.host_port),
      ]) {
        if (port !== undefined) taken.add(port);
      }
    }
    const count = 1 + (bridge ? launch.ports.length + (needsProbePort ? 1 : 0) : 0);
    let chosen: number[];
    try {
      chosen = await this.ports.allocate(count, taken);
    } catch (error) {
      throw new LaunchFailure(errorText(error));
    }
    record.ssh_port = chosen[0];
    record.ports = launch.ports.map((port, index) => ({
      container_port: port.container_port,
      host_port: bridge ? (chosen[1 + index] as number) : port.container_port,
      protocol: port.protocol,
    }));
    record.probe_ports =
      needsProbePort && healthPort !== undefined
        ? [{ container_port: healthPort, host_port: chosen[count - 1] as number, protocol: 'tcp' }]
        : [];
    await this.context.outbox.commit(job);
  }

  private hostPortOf(job: LiveJob, containerPort: number): number | undefined {
    if (this.context.settings.networkMode === 'host') return containerPort;
    const all: PublishedPort[] = [...(job.record.ports ?? []), ...(job.record.probe_ports ?? [])];
    return all.find((port) => port.container_port === containerPort)?.host_port;
  }

  private readinessPlan(job: LiveJob): ReadinessPlan {
    const launch = job.record.launch as LaunchJobBody;
    const plan: ReadinessPlan = { host: this.context.settings.probeHost };
    if (launch.health_check !== undefined) {
      const port = this.hostPortOf(job, launch.health_check.port);
      if (port === undefined) throw new LaunchFailure(`health port ${launch.health_check.port} is not published`);
      plan.health = { port, ...(launch.health_check.path !== undefined ? { path: launch.health_check.path } : {}) };
    }
    if (launch.engine_api_key !== undefined) {
      const enginePort = engineContainerPort(launch);
      const port = enginePort === undefined ? undefined : this.hostPortOf(job, enginePort);
      if (port === undefined) throw new LaunchFailure('model template without a port to ask for its model list');
      plan.models = { port, apiKey: launch.engine_api_key };
    }
    return plan;
  }

  private async waitReady(job: LiveJob, signal: AbortSignal): Promise<JobEvidence> {
    const { clock, runtime, settings } = this.context;
    const plan = this.readinessPlan(job);
    const timeoutMs = settings.readinessTimeoutMs;
    const deadline = clock.now().getTime() + timeoutMs;
    const containerId = job.record.container_id as string;
    let attempts = 0;
    let lastProblem = 'no check ran';
    for (;;) {
      if (signal.aborted) throw new LaunchFailure('readiness abandoned');
      attempts += 1;
      const state = await runtime.inspectContainer(containerId);
      if (state === undefined) throw new LaunchFailure('the container vanished before it was ready');
      if (!state.running) throw await this.exitedEarly(job, state);
      try {
        const checks = await checkReadiness(plan, settings.probeTimeoutMs);
        // The checks passed; the container must still be the one answering.
        const after = await runtime.inspectContainer(containerId);
        if (after?.running === true) return { container_running: true, ...checks, readiness_attempts: attempts };
      } catch (error) {
        if (!(error instanceof NotReadyError)) throw error;
        lastProblem = error.message;
      }
      if (clock.now().getTime() >= deadline) throw new LaunchFailure(`not ready within ${Math.round(timeoutMs / 1000)} s: ${lastProblem}`);
      await clock.sleep(settings.readinessIntervalMs, signal);
    }
  }

  private async exitedEarly(job: LiveJob, state: ContainerState): Promise<LaunchFailure> {
    const logs = await this.context.runtime
      .containerLogs(state.id, { tailLines: FAILURE_LOG_LINES, maxBytes: FAILURE_LOG_BYTES })
      .catch(() => '');
    const tail = logs.trim() === '' ? '' : `; last output:\n${logs.trim()}`;
    job.containerState = state.status;
    return new LaunchFailure(`the container exited with code ${state.exitCode ?? 'unknown'} before it was ready${tail}`, state.exitCode);
  }

  /** Nothing may keep running unpaid: the container is stopped, kept for diagnosis until clean_job. */
  private async fail(job: LiveJob, error: unknown): Promise<void> {
    const { logger, outbox, runtime, settings } = this.context;
    const record = job.record;
    const detail = jobDetail(record, error instanceof LaunchFailure || error instanceof Error ? error.message : String(error));
    logger.warn({ job_id: record.job_id, detail }, 'job failed');
    this.metering.cancel(job);
    if (record.container_id !== undefined) {
      await runtime.stopContainer(record.container_id, settings.stopGraceS).catch(() => undefined);
    }
    await this.access.close(job);
    enterPhase(record, 'launch_failed');
    record.failure = detail;
    const exitCode = error instanceof LaunchFailure ? error.exitCode : undefined;
    if (exitCode !== undefined) record.exit_code = exitCode;
    await outbox.commit(job, [outbox.status(record, 'failed', { detail, ...(exitCode !== undefined ? { exit_code: exitCode } : {}) })]);
  }
}
