import type { MeterReceiptMessage } from '@ark/shared';
import type { JobRecord } from '../../domain/jobs/job.js';
import { stopAfterCharge } from '../../domain/jobs/ending.js';
import { budgetThresholdsCrossed } from '../../domain/webhooks/delivery.js';
import { isPostgres, type Tx } from '../../store/db.js';
import { type ChargeLegs, postMeteredCharges } from '../../store/job-charges.js';
import { type JobMeterPatch, lockJobs, toJobRecord, updateJobMeters } from '../../store/jobs.js';
import type { JobDeps } from './deps.js';
import { applyMeterReceipt, meteredCharge, receiptVerdict } from './metering.js';

/** A receipt of the gateway's group, with the machine whose channel carried it. */
export interface ReceiptOfMachine {
  machineId: string;
  msg: MeterReceiptMessage;
}

/**
 * The 'meter_receipt' handler for a group of receipts the gateway applies in one transaction (group commit across
 * jobs, gateway/applier.ts). On Postgres every round trip costs more than the work, so the ordinary case, a receipt
 * accepted in full that crosses no budget threshold and stops nothing, is written for all the group's jobs at once:
 * one statement locks the jobs (id order), one updates them, one inserts the postings, one the lots, one locks
 * the ledger's accounts (key order) and one moves their balances. Everything else (a refused or partly counted receipt, a job's first charge, a
 * threshold, a stop, a second receipt of one job in the group) goes through applyMeterReceipt after those writes, in
 * the group's order, and so reads them. The same rules decide both ways (domain/metering), so the ledger and the
 * jobs end where one receipt at a time would leave them. SQLite has no round trips to save: one at a time.
 */
export async function applyMeterReceipts(deps: JobDeps, trx: Tx, receipts: readonly ReceiptOfMachine[], now: Date): Promise<void> {
  if (!isPostgres(trx) || receipts.length === 1) {
    for (const { machineId, msg } of receipts) await applyMeterReceipt(deps, trx, machineId, msg, now);
    return;
  }
  const rows = await lockJobs(trx, [...new Set(receipts.map((r) => r.msg.job_id))]);
  const jobs = new Map(rows.map((row) => [row.id, toJobRecord(row)]));
  const seen = new Set<string>();
  const charges: ChargeLegs[] = [];
  const patches: JobMeterPatch[] = [];
  const alone: ReceiptOfMachine[] = [];
  for (const receipt of receipts) {
    const { machineId, msg } = receipt;
    if (seen.has(msg.job_id)) {
      alone.push(receipt);
      continue;
    }
    seen.add(msg.job_id);
    const job = jobs.get(msg.job_id);
    // As applyMeterReceipt: a receipt for an unknown job, or one another machine runs, has no effect.
    if (!job || job.machineId !== machineId) continue;
    const written = acceptedInFull(deps, job, msg, now);
    if (written === null) {
      alone.push(receipt);
      continue;
    }
    charges.push(written.charge);
    patches.push(written.patch);
  }
  // The jobs first, the ledger last: its shared rows (fees, a host's earnings) stay locked only until the commit.
  await updateJobMeters(trx, patches, now);
  await postMeteredCharges(trx, charges);
  for (const { machineId, msg } of alone) await applyMeterReceipt(deps, trx, machineId, msg, now);
}

/** The writes of a receipt accepted in full with nothing else to do, or null when it needs applyMeterReceipt. */
function acceptedInFull(
  deps: JobDeps,
  job: JobRecord,
  msg: MeterReceiptMessage,
  now: Date,
): { charge: ChargeLegs; patch: JobMeterPatch } | null {
  if (job.cumulativeChargeMicro === 0n) return null;
  const verdict = receiptVerdict(deps, job, msg, now);
  if (verdict.outcome !== 'accepted' || verdict.uncountedMs > 1000n) return null;
  const { charges, legs, patch, after } = meteredCharge(deps, job, msg, verdict, now);
  if (budgetThresholdsCrossed(job.cumulativeChargeMicro, charges.cumulativeMicro, job.fundedBudgetMicro).length > 0) return null;
  if (stopAfterCharge(after, now) !== null) return null;
  return { charge: legs, patch };
}
