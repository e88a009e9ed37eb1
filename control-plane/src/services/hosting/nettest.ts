import type { NettestReceiptMessage } from '@ark/shared';
import { nettestCommandBody } from '../../domain/machines/nettest.js';
import { measuredNetworkOf } from '../../domain/machines/network.js';
import { bandwidthMbpsOf } from '../../domain/offers/offer.js';
import type { Tx } from '../../store/db.js';
import { writeNetworkFacts, writeOfferBandwidth } from '../../store/machines.js';
import type { QueuedCommand } from '../../store/outbox.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { type HostingDeps, type MachineCaller, machineForCaller } from './deps.js';

/**
 * POST /api/v1/hosts/machines/{id}/nettest: queues a run_nettest command for the machine (owner or admin; anyone
 * else is told 404). The agent's receipt comes back on the channel (applyNettestReceipt).
 */
export async function queueNettest(
  deps: HostingDeps,
  caller: MachineCaller,
  machineId: string,
  commit?: CommitHook<QueuedCommand>,
): Promise<QueuedCommand> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const machine = await machineForCaller(trx, caller, machineId);
      return deps.outbox.enqueue(trx, {
        machineId: machine.id,
        kind: 'run_nettest',
        body: nettestCommandBody(deps.settings.nettestEndpoint),
        now,
      });
    },
    commit,
  );
}

/**
 * The 'nettest_receipt' handler: the latest measurement replaces the machine's network facts and the bandwidth its
 * offer shows. An older measurement than the one stored (a late resend) changes nothing.
 */
export async function applyNettestReceipt(
  _deps: HostingDeps,
  trx: Tx,
  machineId: string,
  receipt: NettestReceiptMessage,
  now: Date,
): Promise<void> {
  const measured = measuredNetworkOf(receipt, now);
  if (!(await writeNetworkFacts(trx, machineId, measured, now))) return;
  // The offer shows what the latest measurement found; a failed one shows nothing rather than a stale figure.
  await writeOfferBandwidth(trx, machineId, bandwidthMbpsOf(measured.downloadMbps, measured.uploadMbps), now);
}
