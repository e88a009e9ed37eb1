import type { TelemetryMessage } from '@ark/shared';
import { type BucketContribution, rollUp } from '../../domain/telemetry/rollup.js';
import type { Tx } from '../../store/db.js';
import { mergeTelemetry, mergeTelemetryOfMachines, readTelemetry } from '../../store/telemetry.js';
import type { HostingDeps } from './deps.js';

/** The 'telemetry' handler: a batch merges into the 300-second buckets, in the gateway's apply-once transaction. */
export async function ingestTelemetry(trx: Tx, machineId: string, msg: TelemetryMessage, now: Date): Promise<void> {
  await mergeTelemetry(trx, machineId, rollUp(msg.samples, now));
}

/** The same for the telemetry of several machines applied together (the gateway's group): two upserts in all. */
export async function ingestTelemetryGroup(
  trx: Tx,
  batches: ReadonlyArray<{ machineId: string; msg: TelemetryMessage }>,
  now: Date,
): Promise<void> {
  await mergeTelemetryOfMachines(
    trx,
    batches.map(({ machineId, msg }) => ({ machineId, contributions: rollUp(msg.samples, now) })),
  );
}

/** Buckets overlapping the last `windowS` seconds, oldest first. */
export function machineTelemetry(deps: HostingDeps, machineId: string, windowS: number): Promise<BucketContribution[]> {
  return readTelemetry(deps.store.db, machineId, windowS, deps.clock.now());
}
