import { LIVENESS_GRACE_HEARTBEATS } from '../../domain/machines/go-live.js';
import { inTransactionWithRetry } from '../../store/transaction.js';
import { emitWebhookEvent, livenessChanges, recordLivenessTold } from '../../store/webhooks.js';
import type { WebhookDeps } from './deps.js';

/** Machines examined per step, per direction. */
const LIVENESS_BATCH = 500;

/**
 * Tells owners when a machine comes online or goes offline (`machine.online` / `machine.offline`). Liveness is the
 * one the API shows (a heartbeat within 3 intervals); what was told is kept per machine, so each change is told once,
 * in the transaction that records it. Returns how many changes were told.
 */
export async function tellLivenessChanges(deps: WebhookDeps, heartbeatIntervalMs: number): Promise<number> {
  const now = deps.clock.now();
  const onlineSince = new Date(now.getTime() - LIVENESS_GRACE_HEARTBEATS * heartbeatIntervalMs);
  let told = 0;
  for (const change of await livenessChanges(deps.store.db, onlineSince, LIVENESS_BATCH)) {
    const recorded = await inTransactionWithRetry(deps.store, async (trx) => {
      if (!(await recordLivenessTold(trx, change.machineId, change.online, now))) return false;
      const type = change.online ? 'machine.online' : 'machine.offline';
      await emitWebhookEvent(trx, change.ownerAccountId, type, { machine_id: change.machineId }, now);
      return true;
    });
    if (recorded) told++;
  }
  return told;
}
