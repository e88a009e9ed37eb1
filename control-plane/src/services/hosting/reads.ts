import type { OfferVersionRecord } from '../../domain/offers/offer.js';
import type { JobRecord } from '../../domain/jobs/job.js';
import { jobsOfMachine } from '../../store/jobs.js';
import { findMachine, listMachinesOfOwner, type MachineRow } from '../../store/machines.js';
import { findMachineVerification } from '../../store/hardware-receipts.js';
import { currentOfferOf } from '../../store/offers.js';
import { reliabilityOf } from '../../store/reliability.js';
import type { HostingDeps } from './deps.js';
import {
  type MachineHardwareRecord,
  type MachineRecord,
  type MachineReliabilityRecord,
  toMachineRecord,
  toMachineReliabilityRecord,
} from './records.js';

// What routes read about machines. A heartbeat still buffered in this process is newer than the stored one: every
// machine read here carries it.

export interface MachineReads {
  find(machineId: string): Promise<MachineRecord | undefined>;
  /** The owner's machines, oldest first, after the (created_at, id) position. */
  listOfOwner(ownerAccountId: string, after: [string, string] | null, fetch: number): Promise<MachineRecord[]>;
  currentOffer(machineId: string): Promise<OfferVersionRecord | undefined>;
  /** The reliability worker's last score of the machine, if any. */
  reliability(machineId: string): Promise<MachineReliabilityRecord | undefined>;
  /** The machine's hardware verification standing, if it has one. */
  hardware(machineId: string): Promise<MachineHardwareRecord | undefined>;
  /** The machine's rentals now: jobs reserved, starting, running or stopping on it. */
  rentals(machineId: string): Promise<JobRecord[]>;
}

export function machineReads(deps: HostingDeps): MachineReads {
  const db = deps.store.db;
  const current = (row: MachineRow): MachineRecord =>
    toMachineRecord({ ...row, last_heartbeat_at: deps.heartbeats.lastHeartbeatAt(row.id, row.last_heartbeat_at) });
  return {
    async find(machineId) {
      const row = await findMachine(db, machineId);
      return row ? current(row) : undefined;
    },
    async listOfOwner(ownerAccountId, after, fetch) {
      return (await listMachinesOfOwner(db, ownerAccountId, after, fetch)).map(current);
    },
    currentOffer: (machineId) => currentOfferOf(db, machineId),
    hardware: (machineId) => findMachineVerification(db, machineId),
    rentals: (machineId) => jobsOfMachine(db, machineId, ['RESERVED', 'STARTING', 'RUNNING', 'STOPPING']),
    async reliability(machineId) {
      const score = await reliabilityOf(db, machineId);
      return score && toMachineReliabilityRecord(score);
    },
  };
}
