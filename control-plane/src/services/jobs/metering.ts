import type { MeterReceiptMessage } from '@ark/shared';
import { iso } from '../../clock.js';
import { maturesAtOf } from '../../domain/earnings/maturity.js';
import type { JobRecord } from '../../domain/jobs/job.js';
import { stopAfterCharge } from '../../domain/jobs/ending.js';
import { meterStateOf } from '../../domain/jobs/meter.js';
import { chargeDelta, chargesFor } from '../../domain/metering/charges.js';
import { describeReceiptVerdict, evaluateReceipt, type ReceiptVerdict } from '../../domain/metering/receipts.js';
import { budgetThresholdsCrossed } from '../../domain/webhooks/delivery.js';
import type { Tx } from '../../store/db.js';
import { type ChargeLegs, postMeteredCharge } from '../../store/job-charges.js';
import { type JobMeterPatch, updateJob, updateJobMeter } from '../../store/jobs.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import type { JobDeps } from './deps.js';
import { holdJob } from './held-job.js';

/**
 * The 'meter_receipt' handler: applied once per message id inside the gateway's transaction. The receipt rules
 * (domain/metering/receipts.ts) decide what counts; the charge delta is posted to the ledger; a job whose charge
 * reached its budget, or whose funding ran out, is stopped in the same transaction.
 */
export async function applyMeterReceipt(deps: JobDeps, trx: Tx, machineId: string, msg: MeterReceiptMessage, now: Date): Promise<void> {
  const held = await holdJob(deps, trx, msg.job_id);
  if (!held || held.job.machineId !== machineId) return;
  const job = held.job;
  const verdict = receiptVerdict(deps, job, msg, now);
  if (verdict.outcome === 'duplicate') return;
  if (verdict.outcome !== 'accepted') {
    // A rejected period uses up its seq (the meter moves on); a refused receipt leaves the sequence alone.
    if (verdict.outcome === 'rejected') await updateJob(trx, job.id, { meter_seq: BigInt(msg.meter_seq), updated_at: iso(now) });
    await held.events(
      [
        {
          kind: 'receipt_refused',
          message: describeReceiptVerdict(verdict),
          data: { reason: verdict.reason, fence: msg.fence, meter_seq: msg.meter_seq, runtime_ms: msg.runtime_ms },
        },
      ],
      now,
    );
    return;
  }
  const { charges, legs, patch, after } = meteredCharge(deps, job, msg, verdict, now);
  await postMeteredCharge(trx, legs);
  await updateJobMeter(trx, patch, now);
  held.job = after;
  if (verdict.uncountedMs > 1000n) {
    await held.events(
      [
        {
          kind: 'receipt_partly_counted',
          message: `Meter receipt ${msg.meter_seq}: ${verdict.uncountedMs} ms were not charged (before the meter floor, already metered, or past a limit).`,
          data: { meter_seq: msg.meter_seq, counted_ms: verdict.countedMs.toString(), uncounted_ms: verdict.uncountedMs.toString() },
        },
      ],
      now,
    );
  }
  // Charges crossing 50, 80 or 100 % of the funded budget tell the renter (issue 10), in this same transaction.
  for (const percent of budgetThresholdsCrossed(job.cumulativeChargeMicro, charges.cumulativeMicro, job.fundedBudgetMicro)) {
    const data = {
      job_id: job.id,
      percent,
      charged_micro: charges.cumulativeMicro.toString(),
      funded_budget_micro: job.fundedBudgetMicro.toString(),
    };
    await emitWebhookEvent(trx, job.accountId, 'job.budget_threshold', data, now);
  }
  const stop = stopAfterCharge(held.job, now);
  if (stop !== null) await held.beginStop(stop, now);
}

/** The meter's verdict on one receipt message for the job as it stands (both the one-receipt and the group path). */
export function receiptVerdict(deps: JobDeps, job: JobRecord, msg: MeterReceiptMessage, now: Date): ReceiptVerdict {
  return evaluateReceipt(
    meterStateOf(job),
    {
      fence: BigInt(msg.fence),
      seq: BigInt(msg.meter_seq),
      periodStart: new Date(msg.period_start),
      periodEnd: new Date(msg.period_end),
      runtimeMs: BigInt(msg.runtime_ms),
    },
    now,
    deps.settings.meterSkewMs,
  );
}

type Accepted = Extract<ReceiptVerdict, { outcome: 'accepted' }>;

/**
 * What an accepted receipt charges (both the one-receipt and the group path): the job's new accepted runtime and
 * cumulative charges, the ledger legs of the difference, and the job as it stands after them.
 */
export function meteredCharge(deps: JobDeps, job: JobRecord, msg: MeterReceiptMessage, verdict: Accepted, now: Date) {
  const runtime = job.acceptedRuntimeMs + verdict.countedMs;
  const charges = chargesFor(job.rate, job.fundedBudgetMicro, runtime);
  const delta = chargeDelta({ hostMicro: job.chargedHostMicro, feeMicro: job.chargedFeeMicro }, charges);
  const legs: ChargeLegs = {
    jobId: job.id,
    renterAccountId: job.accountId,
    hostAccountId: job.hostAccountId,
    hostMicro: delta.hostMicro,
    feeMicro: delta.feeMicro,
    first: job.cumulativeChargeMicro === 0n,
    at: now,
    maturesAt: maturesAtOf(now, deps.settings.earningsMaturityS),
  };
  // The job's meter columns after the charge: what updateJobMeter (or the group's updateJobMeters) writes.
  const patch: JobMeterPatch = {
    id: job.id,
    acceptedRuntimeMs: runtime,
    cumulativeChargeMicro: charges.cumulativeMicro,
    chargedHostMicro: charges.hostMicro,
    chargedFeeMicro: charges.feeMicro,
    meterSeq: BigInt(msg.meter_seq),
    meteredUntil: verdict.meteredUntil,
  };
  const after: JobRecord = { ...job, ...patch, lastMeterReceiptAt: now };
  return { runtime, charges, legs, patch, after };
}
