import { seedOfferTerms } from '../../domain/offers/offer.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import { toBool } from '../../store/db.js';
import { isHostingBlocked } from '../../store/hosts.js';
import { findMachine, type MachineRow, setCpuListed, setGoLive as writeGoLive } from '../../store/machines.js';
import { currentOfferOf, seedOffer } from '../../store/offers.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { type HostingDeps, machineForCaller } from './deps.js';

/** A machine's go-live as set: the choice, and its live state now. */
export interface GoLiveRecord {
  machineId: string;
  goLive: boolean;
  live: MachineRow['live_state'];
}

/**
 * POST /api/v1/hosts/machines/{id}/go-live (owner only). Off takes the machine out of the listing at once; on waits
 * for its next healthy heartbeat, seeding an offer at the default rate when it has none. The agent is told with an
 * update_go_live command. Repeating the current choice changes nothing (a live machine stays live).
 */
export async function setGoLive(
  deps: HostingDeps,
  accountId: string,
  machineId: string,
  goLive: boolean,
  commit?: CommitHook<GoLiveRecord>,
): Promise<GoLiveRecord> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const machine = await machineForCaller(trx, { accountId, admin: false }, machineId);
      if (goLive && (await isHostingBlocked(trx, accountId))) throw new DomainError('HOSTING_BLOCKED');
      if (toBool(machine.go_live) === goLive) return { machineId: machine.id, goLive, live: machine.live_state };
      await writeGoLive(trx, machine.id, goLive, now);
      if (goLive && !(await currentOfferOf(trx, machine.id))) {
        await seedOffer(trx, { machineId: machine.id, terms: seedOfferTerms(deps.settings.seedRateMicroPerHour, now), now });
      }
      await deps.outbox.enqueue(trx, { machineId: machine.id, kind: 'update_go_live', body: { go_live: goLive }, now });
      await appendAudit(trx, {
        at: now,
        actorAccountId: accountId,
        action: goLive ? 'hosting.go_live.on' : 'hosting.go_live.off',
        subject: machine.id,
      });
      const updated = await findMachine(trx, machine.id);
      return { machineId: machine.id, goLive, live: (updated as NonNullable<typeof updated>).live_state };
    },
    commit,
  );
}

/** A machine's CPU listing as set, and how many GPUs it reports. */
export interface CpuListingRecord {
  machineId: string;
  cpuListed: boolean;
  gpuCount: number;
}

/**
 * POST /api/v1/hosts/machines/{id}/cpu-listing (owner only). A machine that reports no GPU is offered only while its
 * host lists it as a CPU machine (rented whole, shown without gpu_count and model); on a machine with GPUs it changes
 * nothing renters see. Repeating the current choice changes nothing. Audited.
 */
export async function setCpuListing(
  deps: HostingDeps,
  accountId: string,
  machineId: string,
  listed: boolean,
  commit?: CommitHook<CpuListingRecord>,
): Promise<CpuListingRecord> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const machine = await machineForCaller(trx, { accountId, admin: false }, machineId);
      const record = { machineId: machine.id, cpuListed: listed, gpuCount: Number(machine.gpu_count) };
      if (toBool(machine.cpu_listed) === listed) return record;
      await setCpuListed(trx, machine.id, listed, now);
      await appendAudit(trx, {
        at: now,
        actorAccountId: accountId,
        action: listed ? 'hosting.cpu_listing.on' : 'hosting.cpu_listing.off',
        subject: machine.id,
      });
      return record;
    },
    commit,
  );
}
