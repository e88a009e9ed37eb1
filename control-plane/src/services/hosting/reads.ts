import { findMachine, listMachinesOfOwner, type MachineRow } from '../../store/machines.js';
import { currentOfferOf, type OfferVersionView } from '../../store/offers.js';
import { reliabilityOf } from '../../store/reliability.js';
import type { MachineReliabilityTable } from '../../store/tables/reliability.js';
import type { HostingDeps } from './deps.js';

// What routes read about machines. A heartbeat still buffered in this process is newer than the stored one: every
// row read here carries it.

export interface MachineReads {
  find(machineId: string): Promise<MachineRow | undefined>;
  /** The owner's machines, oldest first, after the (created_at, id) position. */
  listOfOwner(ownerAccountId: string, after: [string, string] | null, fetch: number): Promise<MachineRow[]>;
  currentOffer(machineId: string): Promise<OfferVersionView | undefined>;
  /** The reliability worker's last score of the machine, if any. */
  reliability(machineId: string): Promise<MachineReliabilityTable | undefined>;
}

export function machineReads(deps: HostingDeps): MachineReads {
  const db = deps.store.db;
  const current = (row: MachineRow): MachineRow => ({
    ...row,
    last_heartbeat_at: deps.heartbeats.lastHeartbeatAt(row.id, row.last_heartbeat_at),
  });
  return {
    async find(machineId) {
      const row = await findMachine(db, machineId);
      return row ? current(row) : undefined;
    },
    async listOfOwner(ownerAccountId, after, fetch) {
      return (await listMachinesOfOwner(db, ownerAccountId, after, fetch)).map(current);
    },
    currentOffer: (machineId) => currentOfferOf(db, machineId),
    reliability: (machineId) => reliabilityOf(db, machineId),
  };
}
