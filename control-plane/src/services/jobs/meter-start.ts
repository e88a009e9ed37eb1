import type { MachineManifest } from '@ark/shared';
import { iso } from '../../clock.js';
import { fundingOf, type JobAccessReport } from '../../domain/jobs/job.js';
import { deviceVramOf } from '../../domain/machines/manifest.js';
import { fundedThrough } from '../../domain/metering/charges.js';
import { fromJson } from '../../store/db.js';
import { accessToJson } from '../../store/jobs.js';
import { findMachine } from '../../store/machines.js';
import { recordAgentQualification } from '../../store/templates.js';
import type { HeldJob } from './held-job.js';

// STARTING -> RUNNING: the meter starts. Reached from verified readiness (services/jobs/readiness.ts), or straight
// from the agent's report when verification is switched off (ARK_READINESS_VERIFY=off, services/jobs/agent-status.ts).

export interface MeterStart {
  /** The meter's start: the verification's moment (or, verification off, the agent's ready time). */
  startedAt: Date;
  access: JobAccessReport;
  /** What the agent sent with its readiness (container running, health port, engine). */
  agentEvidence: Record<string, unknown>;
  message: string;
  /** More for the state_changed event (the verification's evidence). */
  data?: Record<string, unknown>;
}

export async function startMeter(held: HeldJob, start: MeterStart, now: Date): Promise<void> {
  const { startedAt, access } = start;
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
    { message: start.message, data: { meter_started_at: iso(startedAt), evidence: start.agentEvidence, ...(start.data ?? {}) } },
  );
  held.job = { ...held.job, meterStartedAt: startedAt, meterFloorAt: startedAt, access };
  if (held.job.template !== null) await qualify(held, start.agentEvidence, now);
}

/** A template job became ready: the machine proved it runs the template (image by digest, VRAM fits). */
async function qualify(held: HeldJob, evidence: Record<string, unknown>, now: Date): Promise<void> {
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
      evidence,
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
