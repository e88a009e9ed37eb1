import type { CredentialKind, Principal } from '../../domain/accounts/principal.js';
import { committedRateOf, isRaise, type SpendCapSetting, type SpendCapStanding, standingOf } from '../../domain/jobs/spend-cap.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import type { Executor, Tx } from '../../store/db.js';
import { committingRatesOf, lockSpendCap, setSpendCap, spendCapOf } from '../../store/spend-cap.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { JobDeps } from './deps.js';

// GET and PUT /api/v1/account/spend-cap. The reservation enforces the cap (reserve.ts); the quote checks it early
// (quote.ts) without a lock.

async function standingIn(deps: JobDeps, db: Executor, accountId: string, own: bigint | null): Promise<SpendCapStanding> {
  const setting: SpendCapSetting = { ownCapMicroPerHour: own, defaultCapMicroPerHour: deps.settings.spendRateCapMicroPerHour };
  return standingOf(setting, committedRateOf(await committingRatesOf(db, accountId)));
}

/** The account's cap, the operator's default and what its unstopped jobs commit, without a lock (reads, quotes). */
export async function spendCapStanding(deps: JobDeps, db: Executor, accountId: string): Promise<SpendCapStanding> {
  const own = await spendCapOf(db, accountId);
  if (!own) throw new DomainError('NOT_FOUND');
  return standingIn(deps, db, accountId, own.capMicroPerHour);
}

/** GET /api/v1/account/spend-cap. */
export function readSpendCap(deps: JobDeps, accountId: string): Promise<SpendCapStanding> {
  return spendCapStanding(deps, deps.store.db, accountId);
}

/** The account's standing with its row held: what a reservation decides on (reserve.ts). */
export async function lockedSpendCapStanding(deps: JobDeps, trx: Tx, accountId: string): Promise<SpendCapStanding> {
  const own = await lockSpendCap(trx, accountId);
  if (!own) throw new DomainError('NOT_FOUND');
  return standingIn(deps, trx, accountId, own.capMicroPerHour);
}

export interface SpendCapChange {
  accountId: string;
  /** The new own cap; null: back to the operator's default. */
  capMicroPerHour: bigint | null;
  /** The caller's credential and its step-up: raising the effective cap needs a fresh one. */
  via: CredentialKind;
  stepUp: Principal['stepUp'];
}

/**
 * Sets the account's own cap. Lowering (or keeping) it needs nothing more than the renter scope, so a key can always
 * tighten its own leash; raising the effective cap needs a fresh step-up (STEP_UP_REQUIRED) and is audited, as every
 * change is. A cap under what running jobs already commit is allowed: it refuses new reservations, it stops nothing.
 */
export async function changeSpendCap(
  deps: JobDeps,
  change: SpendCapChange,
  commit?: CommitHook<SpendCapStanding>,
): Promise<SpendCapStanding> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const current = await lockSpendCap(trx, change.accountId);
      if (!current) throw new DomainError('NOT_FOUND');
      const setting: SpendCapSetting = {
        ownCapMicroPerHour: current.capMicroPerHour,
        defaultCapMicroPerHour: deps.settings.spendRateCapMicroPerHour,
      };
      const raised = isRaise(setting, change.capMicroPerHour);
      if (raised) {
        const fresh = change.stepUp !== null && change.stepUp.until.getTime() > now.getTime();
        if (!fresh)
          throw new DomainError('STEP_UP_REQUIRED', 'Raising the spend-rate cap needs a fresh step-up (POST /api/v1/account/step-up).');
      }
      if (current.capMicroPerHour !== change.capMicroPerHour) {
        await setSpendCap(trx, change.accountId, change.capMicroPerHour, now);
        await appendAudit(trx, {
          at: now,
          actorAccountId: change.accountId,
          action: 'spend_cap.changed',
          subject: change.accountId,
          detail: {
            from: current.capMicroPerHour?.toString() ?? null,
            to: change.capMicroPerHour?.toString() ?? null,
            default: setting.defaultCapMicroPerHour.toString(),
            raised,
            via: change.via,
            ...(raised && change.stepUp ? { step_up: change.stepUp.method } : {}),
          },
        });
      }
      return standingIn(deps, trx, change.accountId, change.capMicroPerHour);
    },
    commit,
  );
}

/**
 * The operator sets an account's own cap from `ark-cp` (no step-up: the operator's shell is the authority), audited
 * with the operator's reason; null goes back to the operator's default. Like the account's own change, a cap under
 * what running jobs commit refuses new reservations and stops nothing.
 */
export async function setSpendCapByOperator(
  deps: JobDeps,
  input: { accountId: string; capMicroPerHour: bigint | null; reason: string },
): Promise<SpendCapStanding> {
  const now = deps.clock.now();
  return transact(deps.store, async (trx) => {
    const current = await lockSpendCap(trx, input.accountId);
    if (!current) throw new DomainError('NOT_FOUND');
    await setSpendCap(trx, input.accountId, input.capMicroPerHour, now);
    await appendAudit(trx, {
      at: now,
      actorAccountId: null,
      action: 'spend_cap.set_by_operator',
      subject: input.accountId,
      detail: {
        from: current.capMicroPerHour?.toString() ?? null,
        to: input.capMicroPerHour?.toString() ?? null,
        default: deps.settings.spendRateCapMicroPerHour.toString(),
        reason: input.reason,
      },
    });
    return standingIn(deps, trx, input.accountId, input.capMicroPerHour);
  });
}
