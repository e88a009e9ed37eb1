import type { JobStatusMessage, MachineManifest } from '@ark/shared';
import { iso } from '../../clock.js';
import {
  agentInstant,
  outcomeOf,
  pullProgressToRecord,
  reactToStatus,
  STATUS_TRANSITION_MESSAGES,
  type StatusStep,
} from '../../domain/jobs/agent-status.js';
import { fundingOf, type JobAccessReport } from '../../domain/jobs/job.js';
import { deviceVramOf } from '../../domain/machines/manifest.js';
import { fundedThrough } from '../../domain/metering/charges.js';
import { fromJson, type Tx } from '../../store/db.js';
import { accessToJson } from '../../store/jobs.js';
import { findMachine } from '../../store/machines.js';
import { recordAgentQualification } from '../../store/templates.js';
import type { JobDeps } from './deps.js';
import { type HeldJob, holdJob } from './held-job.js';

/**
 * The 'job_status' handler: applied once per message id inside the gateway's transaction (which holds the machine's
 * channel row). The domain's table (domain/jobs/agent-status.ts) says what the report means; this applies it.
 */
export async function applyJobStatus(deps: JobDeps, trx: Tx, machineId: string, msg: JobStatusMessage, now: Date): Promise<void> {
  const held = await holdJob(deps, trx, msg.job_id);
  // Another machine's job (or an unknown one): nothing of it is touched, nothing is told.
  if (!held || held.job.machineId !== machineId) return;
  const access = accessOf(msg) ?? held.job.access;
  const reaction = reactToStatus(held.job, {
    status: msg.status,
    fence: BigInt(msg.fence),
    outcome: outcomeOf(msg),
    accessKnown: access !== null,
  });
  if (reaction.outcome === 'refused') {
    await held.events([reaction.event], now);
    return;
  }
  for (const step of reaction.steps) await applyStep(held, step, msg, access, now);
}

async function applyStep(held: HeldJob, step: StatusStep, msg: JobStatusMessage, access: JobAccessReport | null, now: Date): Promise<void> {
  switch (step.step) {
    case 'accept':
      return held.transition('STARTING', now, {}, { message: STATUS_TRANSITION_MESSAGES.accept });
    case 'pull_progress': {
      const pct = pullProgressToRecord(held.job.pullProgressPct, msg.progress_pct);
      if (pct === null) return;
      await held.update({ pull_progress_pct: BigInt(pct) });
      await held.events([{ kind: 'pull_progress', message: `Pulling the image: ${pct}%.`, data: { progress_pct: pct } }], now);
      return;
    }
    case 'event':
      return held.events([step.event], now);
    case 'start_meter':
      return startMeter(held, msg, access as JobAccessReport, now);
    case 'refresh_access':
      if (access !== null) await held.update({ access: accessToJson(access), updated_at: iso(now) });
      return;
    case 'rebind':
      return held.rebind(now, 'readiness', STATUS_TRANSITION_MESSAGES.rebind);
    case 'begin_stop':
      return held.beginStop(step.reason, now);
    case 'fail':
      return held.fail(step.reason, now, step.data);
    case 'stopped': {
      const floor = step.floor === 'stop_requested' ? (held.job.stopRequestedAt ?? held.job.createdAt) : held.job.createdAt;
      return held.stopped(agentInstant(msg.at, now, floor), now, step.data);
    }
    case 'clean_early':
      return held.transition('CLEANING', now, {}, { message: STATUS_TRANSITION_MESSAGES.clean_early });
    case 'close':
      return held.close(now);
  }
}

/** Verified readiness: the meter starts at the agent's ready time (never later than now, never before the reservation). */
async function startMeter(held: HeldJob, msg: JobStatusMessage, access: JobAccessReport, now: Date): Promise<void> {
  const startedAt = agentInstant(msg.at, now, held.job.createdAt);
  const funded = fundedThrough(fundingOf(held.job), startedAt).at;
  await held.transition(
    'RUNNING',
    now,
    {
      meter_started_at: iso(startedAt),
      meter_floor_at: iso(startedAt),
      metered_until: null,
      meter_seq: 0n,
      access: accessToJson(access),
      funded_through: iso(funded),
    },
    { message: STATUS_TRANSITION_MESSAGES.start_meter, data: { meter_started_at: iso(startedAt), evidence: msg.evidence ?? {} } },
  );
  held.job = { ...held.job, meterStartedAt: startedAt, meterFloorAt: startedAt, access };
  if (held.job.template !== null) await qualify(held, msg, now);
}

/** A template job became ready: the machine proved it runs the template (image by digest, VRAM fits). */
async function qualify(held: HeldJob, msg: JobStatusMessage, now: Date): Promise<void> {
  const template = held.job.template;
  if (template === null) return;
  const machine = await findMachine(held.trx, held.job.machineId);
  const manifest = machine ? (fromJson<MachineManifest>(machine.manifest) as MachineManifest) : null;
  const result = await recordAgentQualification(held.trx, {
    templateId: template.id,
    machineId: held.job.machineId,
    now,
    detail: {
      imageDigest: held.job.imageDigest,
      deviceVramBytes: manifest ? deviceVramOf(manifest, held.job.gpuPciAddresses) : [],
      jobId: held.job.id,
      ...(msg.evidence !== undefined ? { evidence: msg.evidence as Record<string, unknown> } : {}),
    },
  });
  if (!result.recorded) {
    await held.events(
      [
        {
          kind: 'qualification_skipped',
          message: `The template was not qualified on this machine: ${result.reason}.`,
          data: { reason: result.reason },
        },
      ],
      now,
    );
  }
}

/** The access details a readiness report carries, as the domain names them. */
function accessOf(msg: JobStatusMessage): JobAccessReport | null {
  if (!msg.access) return null;
  return {
    sshPort: msg.access.ssh_port,
    sshHostKeyFingerprint: msg.access.ssh_host_key_fingerprint,
    publicHost: msg.access.public_host ?? null,
    ports: msg.access.ports.map((p) => ({ containerPort: p.container_port, hostPort: p.host_port, protocol: p.protocol })),
  };
}
