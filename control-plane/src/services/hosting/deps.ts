import { LIVENESS_GRACE_HEARTBEATS } from '../../domain/machines/go-live.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import type { SelftestConfig } from '../../config/selftest.js';
import { DomainError } from '../../errors.js';
import type { Executor, Store } from '../../store/db.js';
import { findMachine, type MachineRow } from '../../store/machines.js';
import type { HeartbeatBuffer } from '../../store/heartbeats.js';
import type { MachineLiveFactsReader } from '../../store/machine-live-facts.js';
import type { OutboxWriter } from '../../store/outbox.js';
import type { PaidAdmissionGuard } from '../admissions/guard.js';
import type { ReceiptRefusalCounts } from './hardware-receipts.js';

/** What the hosting use cases read from the configuration. */
export interface HostingSettings {
  /** The machine rate of the offer seeded when a host turns go-live on, micro-USDC per hour. */
  seedRateMicroPerHour: bigint;
  /** The base URL agents measure their network against. */
  nettestEndpoint: string;
  /** The liveness grace (3 heartbeat intervals): a longer gap between heartbeats starts a new online interval. */
  onlineGraceMs: number;
  /** ARK_REPLICA_URL: this replica's address for the others; null for a single replica (nothing recorded). */
  replicaUrl: string | null;
  /** The self-test's benchmark image, bound and daily interval (ARK_SELFTEST_*). */
  selftest: SelftestConfig;
}

export function hostingSettingsOf(config: Config): HostingSettings {
  return {
    seedRateMicroPerHour: config.seedRateMicroPerHour,
    nettestEndpoint: config.nettestEndpoint ?? `${config.publicBaseUrl}/api/v1/nettest`,
    onlineGraceMs: LIVENESS_GRACE_HEARTBEATS * config.heartbeatIntervalMs,
    replicaUrl: config.replicaUrl,
    selftest: config.selftest,
  };
}

/** Everything a hosting use case is given: built once by services/index.ts. */
export interface HostingDeps {
  store: Store;
  clock: Clock;
  settings: HostingSettings;
  outbox: OutboxWriter;
  /** The process's write-behind buffer of plain heartbeats, and what readers of last-seen consult. */
  heartbeats: HeartbeatBuffer;
  /** Reads what a heartbeat is judged against, batched (absent: one read per heartbeat). */
  liveFacts?: MachineLiveFactsReader;
  /** Going live lists the seeded offer: a host offer publication, so it passes the paid-admission guard. */
  admissions?: PaidAdmissionGuard;
  /** Refused hardware receipts by reason: the process's counts, read by the metrics registry when scraped. */
  receiptRefusals: ReceiptRefusalCounts;
}

/** Who acts on a machine: its owner, or an administrator (signed in with a session). */
export interface MachineCaller {
  accountId: string;
  admin: boolean;
}

/** The machine, when the caller owns it or is an administrator; anyone else is told it does not exist (404). */
export async function machineForCaller(db: Executor, caller: MachineCaller, machineId: string): Promise<MachineRow> {
  const machine = await findMachine(db, machineId);
  if (!machine || (machine.owner_account_id !== caller.accountId && !caller.admin)) throw new DomainError('NOT_FOUND');
  return machine;
}
