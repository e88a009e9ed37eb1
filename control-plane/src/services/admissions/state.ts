import { appendAudit } from '../../store/audit.js';
import { type AdmissionState, readAdmissionState, writeAdmissionState } from '../../store/admissions.js';
import { countHeldDeposits } from '../../store/deposits.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { AdmissionDeps } from './deps.js';

export interface AdmissionStatus extends AdmissionState {
  /** Deposits HELD now (over a cap, or arrived while admission was paused). */
  heldDeposits: bigint;
}

export async function admissionStatus(deps: AdmissionDeps): Promise<AdmissionStatus> {
  const state = await readAdmissionState(deps.store.db);
  return { ...state, heldDeposits: await countHeldDeposits(deps.store.db) };
}

/**
 * POST /api/v1/admin/admissions: pauses or resumes public admission, audited with the admin and the reason. A pause
 * waits for operations already admitted (they hold the state row shared on Postgres) and never touches running jobs:
 * their metering goes on. A resume then credits the deposits HELD meanwhile, per account oldest first.
 */
export async function setAdmissions(
  deps: AdmissionDeps,
  input: { adminAccountId: string; enabled: boolean; reason: string },
  commit?: CommitHook<AdmissionState>,
): Promise<AdmissionState> {
  const now = deps.clock.now();
  const state = await transact(
    deps.store,
    async (trx) => {
      const before = await readAdmissionState(trx, 'update');
      const after = await writeAdmissionState(trx, {
        enabled: input.enabled,
        reason: input.reason,
        changedBy: input.adminAccountId,
        at: now,
      });
      await appendAudit(trx, {
        at: now,
        actorAccountId: input.adminAccountId,
        action: input.enabled ? 'admin.admissions.resumed' : 'admin.admissions.paused',
        subject: 'platform',
        detail: { reason: input.reason, was_enabled: before.enabled, version: after.version.toString() },
      });
      return after;
    },
    commit,
  );
  // The state is committed whatever happens next; a release that fails here is done by the chain watchers' next step.
  if (state.enabled) await deps.releaseHeldDeposits().catch(() => 0);
  return state;
}
