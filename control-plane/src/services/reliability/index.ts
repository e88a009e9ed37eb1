import type { Clock } from '../../clock.js';
import { iso } from '../../clock.js';
import type { ReliabilityConfig } from '../../config/reliability.js';
import {
  isHeld,
  publishedMaintenance,
  RELIABILITY_PENALTY_E4,
  type ReliabilitySettings,
  reliabilityScore,
  scoreText,
} from '../../domain/machines/reliability.js';
import type { Store } from '../../store/db.js';
import { loadReliabilityPage, pruneOnlineIntervals, writeReliabilities } from '../../store/reliability.js';
import type { MachineReliabilityTable } from '../../store/tables/reliability.js';
import { inTransactionWithRetry } from '../../store/transaction.js';
import { emitWebhookEvent } from '../../store/webhooks.js';

/** Machines scored per page (one transaction each). */
const RELIABILITY_PAGE = 500;

export interface ReliabilityDeps {
  store: Store;
  clock: Clock;
  settings: ReliabilityConfig;
  /** The liveness grace (3 heartbeat intervals): how long a heartbeat keeps a machine online. */
  onlineGraceMs: number;
}

export interface ReliabilityStep {
  scored: number;
  /** Machines newly held under the floor, and released, by this step. */
  held: number;
  released: number;
}

/**
 * The reliability worker's step: scores every machine over the rolling window, stores each score, and holds a machine
 * that is not new and under the floor off new rentals (released once it is back at or above it). A hold or a release
 * is told to the owner (`machine.reliability_delisted` / `machine.reliability_restored`) in the transaction that
 * records it. Running jobs are never touched. Intervals older than the window are pruned.
 */
export async function refreshReliability(deps: ReliabilityDeps): Promise<ReliabilityStep> {
  const now = deps.clock.now();
  const nowMs = now.getTime();
  const settings: ReliabilitySettings = {
    windowMs: deps.settings.windowMs,
    minHistoryMs: deps.settings.minHistoryMs,
    onlineGraceMs: deps.onlineGraceMs,
    penaltyE4: RELIABILITY_PENALTY_E4,
  };
  const since = new Date(nowMs - settings.windowMs);
  const intervalsSince = new Date(nowMs - settings.windowMs - settings.onlineGraceMs);
  const step: ReliabilityStep = { scored: 0, held: 0, released: 0 };
  let afterId: string | null = null;
  for (;;) {
    const page = await loadReliabilityPage(deps.store.db, { afterId, limit: RELIABILITY_PAGE, since, intervalsSince });
    if (page.length === 0) break;
    afterId = page[page.length - 1]?.machineId ?? null;
    await inTransactionWithRetry(deps.store, async (trx) => {
      const rows: MachineReliabilityTable[] = [];
      for (const machine of page) {
        const score = reliabilityScore(
          {
            nowMs,
            historyFromMs: machine.historyFromMs,
            intervals: machine.intervals,
            maintenance: publishedMaintenance(machine.offerVersions),
            penalizedAtMs: machine.penalizedAtMs,
          },
          settings,
        );
        const held = isHeld(score, deps.settings.floorE4);
        const wasHeld = machine.previous?.held ?? false;
        rows.push({
          machine_id: machine.machineId,
          owner_account_id: machine.ownerAccountId,
          score_e4: BigInt(score.scoreE4),
          is_new: score.isNew ? 1n : 0n,
          held: held ? 1n : 0n,
          held_since: held ? (wasHeld ? (machine.previous?.heldSince ?? iso(now)) : iso(now)) : null,
          online_s: BigInt(Math.floor(score.onlineMs / 1000)),
          counted_s: BigInt(Math.floor(score.countedMs / 1000)),
          penalized_jobs: BigInt(score.penalizedJobs),
          window_from: iso(new Date(score.windowFromMs)),
          history_from: machine.historyFromMs === null ? null : iso(new Date(machine.historyFromMs)),
          computed_at: iso(now),
        });
        if (held !== wasHeld) {
          const data = {
            machine_id: machine.machineId,
            score: scoreText(score.scoreE4),
            floor: scoreText(deps.settings.floorE4),
            penalized_jobs: score.penalizedJobs,
          };
          await emitWebhookEvent(
            trx,
            machine.ownerAccountId,
            held ? 'machine.reliability_delisted' : 'machine.reliability_restored',
            data,
            now,
          );
          if (held) step.held++;
          else step.released++;
        }
      }
      // The page's scores in a few statements; the webhook events above are in the same transaction.
      await writeReliabilities(trx, rows);
    });
    step.scored += page.length;
    if (page.length < RELIABILITY_PAGE) break;
  }
  await pruneOnlineIntervals(deps.store.db, intervalsSince);
  return step;
}

/** Machine reliability (issue 10 item 2): the worker's step. */
export function buildReliabilityServices(deps: ReliabilityDeps) {
  return {
    settings: deps.settings,
    refresh: () => refreshReliability(deps),
  };
}

export type ReliabilityServices = ReturnType<typeof buildReliabilityServices>;
