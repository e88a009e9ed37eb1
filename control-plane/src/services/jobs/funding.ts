import { randomUUID } from 'node:crypto';
import type { BudgetExtensionRequest } from '@ark/shared';
import { iso } from '../../clock.js';
import { planBudgetExtension } from '../../domain/jobs/budget-extension.js';
import { type StopCaller, stopDecision } from '../../domain/jobs/ending.js';
import type { StopAnswerState } from '../../domain/jobs/states.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { DomainError } from '../../errors.js';
import { insertAmendment, updateJob } from '../../store/jobs.js';
import { transfer } from '../../store/ledger.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { JobDeps } from './deps.js';
import { holdJobAfterChannel } from './held-job.js';

// The renter's (and an administrator's) hold on a running job's money: stop it, or fund it further.

/**
 * POST /api/v1/jobs/{id}/stop. Before readiness this cancels the launch; while running it stops the container and
 * the final meter receipt follows. A repeat answers STOPPING or the terminal result.
 */
export async function stopJob(
  deps: JobDeps,
  jobId: string,
  caller: StopCaller,
  reasonText: string,
  commit?: CommitHook<StopAnswerState>,
): Promise<StopAnswerState> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const held = await holdJobAfterChannel(deps, trx, jobId);
      if (!held) throw new DomainError('NOT_FOUND');
      const decision = stopDecision(held.job, caller);
      if (decision.outcome === 'answer') return decision.state;
      await held.beginStop(decision.reason, now, reasonText);
      return 'STOPPING';
    },
    commit,
  );
}

export interface BudgetExtended {
  budgetVersion: bigint;
  fundedBudgetMicro: bigint;
}

/**
 * POST /api/v1/jobs/{id}/budget-extension: compare-and-set on job_version and budget_version, one immutable
 * amendment plus the hold (available -> hold) atomically, budget_version bumped; the original rate and host ceiling
 * stay.
 */
export async function extendBudget(
  deps: JobDeps,
  jobId: string,
  accountId: string,
  body: BudgetExtensionRequest,
  commit?: CommitHook<BudgetExtended>,
): Promise<BudgetExtended> {
  const ask = {
    additionalBudgetMicro: BigInt(body.additional_budget_micro),
    newDurationLimitS: BigInt(body.new_duration_limit_s),
    expectedJobVersion: BigInt(body.expected_job_version),
    expectedBudgetVersion: BigInt(body.expected_budget_version),
  };
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const held = await holdJobAfterChannel(deps, trx, jobId);
      if (!held || held.job.accountId !== accountId) throw new DomainError('NOT_FOUND');
      const job = held.job;
      const plan = planBudgetExtension(job, ask, now);
      if (plan.additionalBudgetMicro > 0n) {
        await transfer(trx, {
          from: ledgerAccounts.available(job.accountId),
          to: ledgerAccounts.hold(job.id, job.accountId),
          amountMicro: plan.additionalBudgetMicro,
          kind: 'extension',
          reference: job.id,
          at: now,
        });
      }
      await insertAmendment(trx, {
        id: randomUUID(),
        jobId: job.id,
        accountId,
        budgetVersion: plan.budgetVersion,
        additionalBudgetMicro: plan.additionalBudgetMicro,
        fundedBudgetMicro: plan.fundedBudgetMicro,
        previousDurationLimitS: plan.previousDurationLimitS,
        newDurationLimitS: plan.durationLimitS,
        now,
      });
      await updateJob(trx, job.id, {
        funded_budget_micro: plan.fundedBudgetMicro,
        duration_limit_s: plan.durationLimitS,
        budget_version: plan.budgetVersion,
        job_version: plan.jobVersion,
        funded_through: plan.fundedThrough === null ? null : iso(plan.fundedThrough),
        updated_at: iso(now),
      });
      held.job = {
        ...job,
        fundedBudgetMicro: plan.fundedBudgetMicro,
        durationLimitS: plan.durationLimitS,
        budgetVersion: plan.budgetVersion,
        jobVersion: plan.jobVersion,
      };
      await held.events(
        [
          {
            kind: 'budget_extended',
            message: `Budget extended by ${plan.additionalBudgetMicro} micro to ${plan.fundedBudgetMicro} micro; duration limit ${plan.durationLimitS} s.`,
            data: {
              budget_version: plan.budgetVersion.toString(),
              additional_budget_micro: plan.additionalBudgetMicro.toString(),
              funded_budget_micro: plan.fundedBudgetMicro.toString(),
              duration_limit_s: Number(plan.durationLimitS),
            },
          },
        ],
        now,
      );
      return { budgetVersion: plan.budgetVersion, fundedBudgetMicro: plan.fundedBudgetMicro };
    },
    commit,
  );
}
