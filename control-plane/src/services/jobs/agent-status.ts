import type { JobStatusMessage } from '@ark/shared';
import { iso } from '../../clock.js';
import {
  agentInstant,
  outcomeOf,
  pullProgressToRecord,
  reactToStatus,
  STATUS_TRANSITION_MESSAGES,
  type StatusStep,
} from '../../domain/jobs/agent-status.js';
import type { JobAccessReport } from '../../domain/jobs/job.js';
import { READINESS_MESSAGES } from '../../domain/jobs/readiness.js';
import type { Tx } from '../../store/db.js';
import { recordReadinessReport } from '../../store/job-readiness.js';
import { accessToJson } from '../../store/jobs.js';
import type { JobDeps } from './deps.js';
import { type HeldJob, holdJob } from './held-job.js';
import { startMeter } from './meter-start.js';

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
  for (const step of reaction.steps) await applyStep(deps, held, step, msg, access, now);
}

async function applyStep(
  deps: JobDeps,
  held: HeldJob,
  step: StatusStep,
  msg: JobStatusMessage,
  access: JobAccessReport | null,
  now: Date,
): Promise<void> {
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
      return readinessReported(deps, held, msg, access as JobAccessReport, now);
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

/**
 * The agent says the job is ready. Verification on (the default): the report is where verification begins, not where
 * the meter starts: the access is stored, the job waits in STARTING with a work item the readiness verifier takes
 * (services/jobs/readiness.ts), and it is woken once this transaction commits (the gateway's after-commit hook).
 * Verification off (ARK_READINESS_VERIFY=off, a bench and operations switch): the meter starts at the agent's ready
 * time (never later than now, never before the reservation).
 */
async function readinessReported(deps: JobDeps, held: HeldJob, msg: JobStatusMessage, access: JobAccessReport, now: Date): Promise<void> {
  const reportedAt = agentInstant(msg.at, now, held.job.createdAt);
  const agentEvidence = (msg.evidence ?? {}) as Record<string, unknown>;
  if (!deps.settings.readiness.verify) {
    return startMeter(held, { startedAt: reportedAt, access, agentEvidence, message: STATUS_TRANSITION_MESSAGES.start_meter }, now);
  }
  await held.update({ access: accessToJson(access), updated_at: iso(now) });
  held.job = { ...held.job, access };
  await recordReadinessReport(held.trx, {
    jobId: held.job.id,
    machineId: held.job.machineId,
    fence: held.job.fence,
    reportedAt,
    evidence: agentEvidence,
    now,
  });
  await held.events(
    [{ kind: 'readiness_reported', message: READINESS_MESSAGES.reported, data: { reported_at: iso(reportedAt), evidence: agentEvidence } }],
    now,
  );
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
