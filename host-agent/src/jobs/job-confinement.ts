// The confinement watch over a running job: the container was created with CPU, memory and pids limits (job-limits.ts,
// applied by job-launch.ts); this part reads what the job does against them and against its included quotas, on the
// meter's ticks (job-metering.ts calls check() while the container runs, and exitEvents() once it stopped):
//
// - OOM kills (the engine's `oom` events) and the pids limit reached are told as job events: the limits hold, the job
//   goes on, the agent and the host are untouched.
// - Disk (the volume, measured from the host, plus the writable layer) and egress (the bytes sent out of the
//   container's own interfaces): a warning at 90% of the included amount, and past it the agent stops the container
//   itself, tells why, and the job ends through its 'exited' status like any container that stopped.
//
// Events go to the control plane as job_event messages only when the launch carried `limits` (a control plane that
// knows the type); otherwise they are logged. Every timing reads the injected clock.
import type { JobEventKind } from '@ark/shared';
import type { ContainerState, ContainerUsage } from '../runtime/container-runtime.js';
import { directoryUsage } from './disk-usage.js';
import type { JobContext, LiveJob } from './job-context.js';
import type { ConfinementState, JobEventBody } from './job-record.js';
import { errorText } from './text.js';

/** A warning is given once the use reaches this share of the included amount. */
export const QUOTA_WARNING_RATIO = 0.9;
/** The engine's OOM events are never read further back than this (a long-stopped agent does not replay days). */
const OOM_LOOKBACK_MAX_MS = 10 * 60_000;
/** How far behind now the window of OOM events ends. */
const OOM_EVENT_LAG_MS = 2_000;

export type QuotaVerdict = 'within' | 'warn' | 'exceeded';

/** Where a use stands against its included amount: past it, at 90% of it (once), or within. */
export function quotaVerdict(usedBytes: number, includedBytes: number, warned: boolean): QuotaVerdict {
  if (usedBytes > includedBytes) return 'exceeded';
  if (!warned && usedBytes >= includedBytes * QUOTA_WARNING_RATIO) return 'warn';
  return 'within';
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

/** Bytes as a person reads them: GiB above one, MiB below. */
export function formatBytes(bytes: number): string {
  return bytes >= GIB ? `${(bytes / GIB).toFixed(2)} GiB` : `${(bytes / MIB).toFixed(1)} MiB`;
}

type QuotaKind = 'disk' | 'egress';

export class JobConfinement {
  /** Volumes already reported as unmeasurable from here (the engine in a VM), so the log says it once. */
  private readonly unreadableVolumes = new Set<string>();

  constructor(private readonly context: JobContext) {}

  /**
   * One look at a running job, when due. Returns true when it stopped the container for a quota (the caller then
   * ends the meter as for any container that stopped); a failed reading is logged and tried again next time.
   */
  async check(job: LiveJob, state: ContainerState): Promise<boolean> {
    const { clock, settings } = this.context;
    const confinement = job.record.confinement;
    if (confinement === undefined || !state.running) return false;
    // Stopped for a quota already, and still running: the stop failed last time; it is tried again, untold.
    if (confinement.stopped_for !== undefined) return this.stopForQuota(job, state.id);
    const nowMs = clock.now().getTime();
    const events: JobEventBody[] = [];
    let stop: QuotaKind | undefined;
    if (job.confinementCheckedAtMs === undefined || nowMs - job.confinementCheckedAtMs >= settings.confinementCheckIntervalMs) {
      job.confinementCheckedAtMs = nowMs;
      stop = await this.checkCounters(job, state.id, confinement, events);
    }
    const diskDue = job.diskCheckedAtMs === undefined || nowMs - job.diskCheckedAtMs >= settings.diskCheckIntervalMs;
    if (stop === undefined && diskDue && this.included(job, 'disk') !== undefined) {
      job.diskCheckedAtMs = nowMs;
      stop = await this.checkDisk(job, state.id, confinement, events);
    }
    // Why it is stopped is on the record with the events, before the stop: a restart in between stops it again.
    if (stop !== undefined) confinement.stopped_for = stop;
    if (events.length > 0 || stop !== undefined) await this.tell(job, events);
    return stop === undefined ? false : this.stopForQuota(job, state.id);
  }

  private async stopForQuota(job: LiveJob, containerId: string): Promise<boolean> {
    const { logger, runtime, settings } = this.context;
    try {
      await runtime.stopContainer(containerId, settings.stopGraceS);
      return true;
    } catch (error) {
      logger.error({ job_id: job.record.job_id, error: errorText(error) }, 'stopping the container for its quota failed; tried again');
      return false;
    }
  }

  /** What to tell once the container is found stopped: its main process killed for memory. */
  async exitEvents(job: LiveJob, state: ContainerState | undefined): Promise<void> {
    const confinement = job.record.confinement;
    if (confinement === undefined || state?.oomKilled !== true) return;
    await this.tell(job, [
      this.event(
        job,
        'oom_kill',
        `The job's main process was killed for going past its memory limit of ${formatBytes(Number(confinement.limits.memory_bytes))}.`,
        {
          memory_limit_bytes: confinement.limits.memory_bytes,
          main_process: true,
        },
      ),
    ]);
  }

  /** Why the agent stopped the container, for the 'exited' status; undefined when it did not. */
  stopDetail(job: LiveJob): string | undefined {
    const kind = job.record.confinement?.stopped_for;
    if (kind !== 'disk' && kind !== 'egress') return undefined;
    const included = this.included(job, kind) ?? 0;
    return `the agent stopped the container: it went past its included ${kind} of ${formatBytes(included)}`;
  }

  private included(job: LiveJob, kind: QuotaKind): number | undefined {
    const text = kind === 'disk' ? job.record.launch?.included_disk_bytes : job.record.launch?.included_egress_bytes;
    return text === undefined ? undefined : Number(text);
  }

  /** Processes, OOM kills and egress, from one stats reading and the engine's events since the last look. */
  private async checkCounters(
    job: LiveJob,
    containerId: string,
    confinement: ConfinementState,
    events: JobEventBody[],
  ): Promise<QuotaKind | undefined> {
    const { clock, logger, runtime } = this.context;
    let usage: ContainerUsage | undefined;
    try {
      usage = await runtime.containerUsage(containerId);
    } catch (error) {
      logger.warn({ job_id: job.record.job_id, error: errorText(error) }, 'container stats failed');
    }
    // The engine records an event a moment after the kernel acts: the window ends a little before now, and the next
    // one starts where it ended, so a kill is counted once.
    const until = new Date(clock.now().getTime() - OOM_EVENT_LAG_MS);
    const startMs = Date.parse(confinement.oom_checked_until ?? job.record.ready_at ?? until.toISOString());
    const since = new Date(Math.max(startMs, until.getTime() - OOM_LOOKBACK_MAX_MS));
    try {
      const kills = since.getTime() < until.getTime() ? await runtime.oomKillsBetween(containerId, since, until) : 0;
      if (since.getTime() < until.getTime()) confinement.oom_checked_until = until.toISOString();
      if (kills > 0) {
        const limit = formatBytes(Number(confinement.limits.memory_bytes));
        events.push(
          this.event(
            job,
            'oom_kill',
            kills === 1
              ? `A process of the job was killed for going past its memory limit of ${limit}; the job goes on.`
              : `${kills} processes of the job were killed for going past its memory limit of ${limit}; the job goes on.`,
            { kills, memory_limit_bytes: confinement.limits.memory_bytes },
          ),
        );
      }
    } catch (error) {
      logger.warn({ job_id: job.record.job_id, error: errorText(error) }, 'container events failed');
    }
    if (usage === undefined) return undefined;
    if (usage.pids !== undefined) {
      const atLimit = usage.pids >= confinement.limits.pids;
      if (atLimit && confinement.pids_at_limit !== true) {
        events.push(
          this.event(
            job,
            'pids_limit_reached',
            `The job holds ${usage.pids} processes, its limit: it cannot start more until some end. The machine is unaffected.`,
            { pids: usage.pids, pids_limit: confinement.limits.pids },
          ),
        );
      }
      confinement.pids_at_limit = atLimit;
    }
    const includedEgress = this.included(job, 'egress');
    if (includedEgress === undefined) return undefined;
    if (usage.networkTxBytes === undefined) {
      if (confinement.egress_unmetered_told !== true) {
        confinement.egress_unmetered_told = true;
        events.push(
          this.event(
            job,
            'egress_unmetered',
            "The job's egress cannot be counted: it shares the host's network, so its included egress is not enforced.",
            { included_egress_bytes: String(includedEgress) },
          ),
        );
      }
      return undefined;
    }
    return this.quota(job, 'egress', usage.networkTxBytes, includedEgress, confinement, events);
  }

  /** The volume (walked from the host) and the writable layer (the engine's figure) against the included disk. */
  private async checkDisk(
    job: LiveJob,
    containerId: string,
    confinement: ConfinementState,
    events: JobEventBody[],
  ): Promise<QuotaKind | undefined> {
    const { logger, runtime } = this.context;
    const included = this.included(job, 'disk');
    if (included === undefined) return undefined;
    let writable: number | undefined;
    let volume: number | undefined;
    try {
      writable = await runtime.containerWritableBytes(containerId);
      const mountpoint = await runtime.volumeMountpoint(job.record.volume_name);
      const measured = mountpoint === undefined ? undefined : await directoryUsage(mountpoint);
      if (measured === undefined) {
        if (!this.unreadableVolumes.has(job.record.volume_name)) {
          this.unreadableVolumes.add(job.record.volume_name);
          logger.warn(
            { job_id: job.record.job_id, mountpoint },
            "the job's volume cannot be read from here; its disk counts the writable layer only",
          );
        }
      } else {
        volume = measured.bytes;
        if (!measured.complete)
          logger.warn({ job_id: job.record.job_id, entries: measured.entries }, 'volume measured in part: too many files');
      }
    } catch (error) {
      logger.warn({ job_id: job.record.job_id, error: errorText(error) }, 'disk measurement failed');
      return undefined;
    }
    if (writable === undefined && volume === undefined) return undefined;
    return this.quota(job, 'disk', (writable ?? 0) + (volume ?? 0), included, confinement, events, {
      volume_bytes: volume ?? 0,
      writable_layer_bytes: writable ?? 0,
    });
  }

  private quota(
    job: LiveJob,
    kind: QuotaKind,
    used: number,
    included: number,
    confinement: ConfinementState,
    events: JobEventBody[],
    extra: Record<string, number> = {},
  ): QuotaKind | undefined {
    const warnedKey = kind === 'disk' ? 'disk_warned' : 'egress_warned';
    const verdict = quotaVerdict(used, included, confinement[warnedKey] === true);
    const data = { used_bytes: used, [`included_${kind}_bytes`]: String(included), ...extra };
    const what = kind === 'disk' ? 'has written' : 'has sent';
    if (verdict === 'warn') {
      confinement[warnedKey] = true;
      events.push(
        this.event(
          job,
          `${kind}_quota_warning` as const,
          `The job ${what} ${formatBytes(used)} of its included ${kind} of ${formatBytes(included)}; past it the job is stopped.`,
          data,
        ),
      );
      return undefined;
    }
    if (verdict !== 'exceeded') return undefined;
    // One reading can jump past both marks (a burst between two checks, a slow engine): the renter is still told
    // first that the job reached its share, then that it was stopped, so the two events always come as a pair.
    if (confinement[warnedKey] !== true) {
      confinement[warnedKey] = true;
      events.push(
        this.event(
          job,
          `${kind}_quota_warning` as const,
          `The job ${what} ${formatBytes(used)} of its included ${kind} of ${formatBytes(included)}; past it the job is stopped.`,
          data,
        ),
      );
    }
    events.push(
      this.event(
        job,
        `${kind}_quota_exceeded` as const,
        `The job ${what} ${formatBytes(used)}, past its included ${kind} of ${formatBytes(included)}: the agent stopped its container.`,
        data,
      ),
    );
    return kind;
  }

  private event(job: LiveJob, kind: JobEventKind, message: string, data: JobEventBody['data']): JobEventBody {
    return {
      t: 'job_event',
      job_id: job.record.job_id,
      fence: job.record.fence,
      at: this.context.clock.now().toISOString(),
      kind,
      message,
      data,
    };
  }

  /** Sends the events (with the record) to a control plane that takes them; logs them for one that does not. */
  private async tell(job: LiveJob, events: JobEventBody[]): Promise<void> {
    const { logger, outbox } = this.context;
    for (const event of events) logger.warn({ job_id: job.record.job_id, kind: event.kind, data: event.data }, event.message);
    await outbox.commit(job, job.record.launch?.limits !== undefined ? events : []);
  }
}
