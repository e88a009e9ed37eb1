import { iso } from '../../clock.js';
import { creditFor, isHostFault } from '../../domain/earnings/credits.js';
import { takeFromEarnings, takeFromLots } from '../../domain/earnings/maturity.js';
import type { CloseReason } from '../../domain/jobs/states.js';
import { type LedgerAccountRef, ledgerAccounts } from '../../domain/ledger/accounts.js';
import { takeFromFees } from '../../store/job-charges.js';
import { claimJobCredit } from '../../store/job-credits.js';
import { balanceOf, transfer } from '../../store/ledger.js';
import { storedHeartbeatAtOf } from '../../store/machines.js';
import { lockOpenLots, setLotRemaining } from '../../store/pending-earnings.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import type { JobDeps } from './deps.js';
import type { HeldJob } from './held-job.js';

/**
 * The healthy point a failure knows itself: a GPU lost per telemetry counts from the last telemetry sample that listed
 * all the job's GPUs (null: none did while it ran, so everything charged comes back). Absent: the machine's last
 * heartbeat.
 */
export interface CreditPoint {
  healthyAt?: Date | null;
}

/**
 * The automatic credit of a job that failed through the host's side (issue 24 item 3), inside the transaction that
 * moves the job to FAILED: a crash before the commit leaves the job unfailed and uncredited (the sweep fails it again
 * and credits it then), after it both are done. Exactly once: FAILED is final, and the job_credits row (primary key:
 * the job) is claimed before any money moves.
 *
 * The renter gets back the charges of the metered runtime after the last verified-healthy point, the machine's last
 * heartbeat (domain/earnings/credits.ts): the host's share from the host's earnings, pending first, then payable;
 * what the host does not have, from the platform's adjustment account (no balance goes below zero); the platform fee
 * on it from the platform's fees. A job event, a `job.credited` webhook to both parties (in the outbox, in this
 * transaction) and a line in both parties' histories show it.
 */
export async function creditFailedJob(
  deps: JobDeps,
  held: HeldJob,
  reason: CloseReason,
  now: Date,
  point: CreditPoint = {},
): Promise<void> {
  const job = held.job;
  // A job never charged (it failed before its meter started) has nothing to give back, and no credit to record.
  if (!isHostFault(reason) || job.cumulativeChargeMicro === 0n) return;
  const trx = held.trx;
  const healthyAt = point.healthyAt !== undefined ? clampTo(point.healthyAt, now) : await lastHeartbeatPoint(deps, held, now);
  const credit = creditFor({
    rate: job.rate,
    fundedBudgetMicro: job.fundedBudgetMicro,
    acceptedRuntimeMs: job.acceptedRuntimeMs,
    chargedHostMicro: job.chargedHostMicro,
    chargedFeeMicro: job.chargedFeeMicro,
    meteredUntil: job.meteredUntil,
    healthyAt,
  });
  const host = job.hostAccountId;
  const lots = credit.hostMicro > 0n ? await lockOpenLots(trx, host) : [];
  const [pendingMicro, payableMicro] = await Promise.all([
    balanceOf(trx, ledgerAccounts.pending(host)),
    balanceOf(trx, ledgerAccounts.payable(host)),
  ]);
  const take = takeFromEarnings(credit.hostMicro, pendingMicro, payableMicro);
  const claimed = await claimJobCredit(trx, {
    job_id: job.id,
    renter_account_id: job.accountId,
    host_account_id: host,
    reason,
    healthy_at: healthyAt === null ? null : iso(healthyAt),
    credit_micro: credit.totalMicro,
    from_pending_micro: take.fromPendingMicro,
    from_payable_micro: take.fromPayableMicro,
    from_platform_micro: take.fromPlatformMicro,
    from_fees_micro: credit.feeMicro,
    created_at: iso(now),
  });
  if (!claimed) return;
  // The fee share comes from the fees' shards (store/job-charges.ts), locked before the host's and renter's accounts:
  // a group of charges locks its fees shard before the host's earnings, and the two orders must agree.
  const fromFees = await takeFromFees(trx, credit.feeMicro);

  const renter = ledgerAccounts.available(job.accountId);
  const post = async (from: LedgerAccountRef, amountMicro: bigint, part: string) => {
    if (amountMicro <= 0n) return;
    await transfer(trx, {
      from,
      to: renter,
      amountMicro,
      kind: 'job_credit',
      reference: job.id,
      externalRef: `job_credit:${job.id}:${part}`,
      at: now,
    });
  };
  if (take.fromPendingMicro > 0n) {
    // The pending balance is the sum of the open lots: what leaves it leaves the lots, newest first.
    for (const lot of takeFromLots(lots, take.fromPendingMicro)) await setLotRemaining(trx, lot.id, lot.remainingMicro);
  }
  await post(ledgerAccounts.pending(host), take.fromPendingMicro, 'pending');
  await post(ledgerAccounts.payable(host), take.fromPayableMicro, 'payable');
  await post(ledgerAccounts.adjustment(), take.fromPlatformMicro, 'platform');
  for (const share of fromFees)
    await post(share.from, share.amountMicro, share.from.owner === ledgerAccounts.fees().owner ? 'fees' : `fees:${share.from.owner}`);

  const data = {
    job_id: job.id,
    reason,
    credit_micro: credit.totalMicro.toString(),
    runtime_ms: credit.runtimeMs.toString(),
    healthy_at: healthyAt === null ? null : iso(healthyAt),
    from_host_pending_micro: take.fromPendingMicro.toString(),
    from_host_payable_micro: take.fromPayableMicro.toString(),
    from_platform_micro: (take.fromPlatformMicro + credit.feeMicro).toString(),
  };
  await held.events(
    [
      {
        kind: 'job_credited',
        message:
          credit.totalMicro > 0n
            ? `Automatic credit: ${credit.totalMicro} micro-USDC back to the renter for ${credit.runtimeMs} ms charged after the machine was last seen healthy.`
            : 'Automatic credit: nothing was charged after the machine was last seen healthy, so nothing comes back.',
        data,
      },
    ],
    now,
  );
  if (credit.totalMicro > 0n) {
    for (const accountId of new Set([job.accountId, host])) await emitWebhookEvent(trx, accountId, 'job.credited', data, now);
  }
  deps.faults.reached('job.credit');
}

/** The machine's last heartbeat, never after the failure (a heartbeat after it says nothing of the job's health). */
async function lastHeartbeatPoint(deps: JobDeps, held: HeldJob, now: Date): Promise<Date | null> {
  const stored = await storedHeartbeatAtOf(held.trx, held.job.machineId);
  const lastHeartbeat = stored === undefined ? null : deps.heartbeats.lastHeartbeatAt(held.job.machineId, stored);
  return lastHeartbeat === null ? null : clampTo(new Date(Date.parse(lastHeartbeat)), now);
}

const clampTo = (at: Date | null, now: Date): Date | null => (at === null ? null : new Date(Math.min(at.getTime(), now.getTime())));
