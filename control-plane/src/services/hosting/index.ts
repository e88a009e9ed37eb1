import { type AgentReplicas, agentReplicas } from './replicas.js';
import type { HardwareReceiptMessage, HeartbeatMessage, NettestReceiptMessage, TelemetryMessage } from '@ark/shared';
import type { BucketContribution } from '../../domain/telemetry/rollup.js';
import type { Executor, Tx } from '../../store/db.js';
import type { HeartbeatBuffer } from '../../store/heartbeats.js';
import type { QueuedCommand } from '../../store/outbox.js';
import type { CommitHook } from '../../store/transaction.js';
import type { HostingDeps, MachineCaller } from './deps.js';
import { type CpuListingRecord, type GoLiveRecord, setCpuListing, setGoLive } from './go-live.js';
import { applyHeartbeat, recordHeartbeat } from './heartbeats.js';
import { applyNettestReceipt, queueNettest } from './nettest.js';
import {
  applyHardwareReceipt,
  machineVerification,
  type MachineVerificationRecord,
  queueDueSelftests,
  scheduleEnrollmentSelftest,
  queueSelftest,
  type ReceiptRefusal,
  type ReceiptRefusalCounts,
} from './hardware-receipts.js';
import { type MachineReads, machineReads } from './reads.js';
import { ingestTelemetry, ingestTelemetryGroup, machineTelemetry } from './telemetry.js';

export { type HostingDeps, type HostingSettings, hostingSettingsOf, type MachineCaller } from './deps.js';
export type { MachineReads } from './reads.js';
export type { MachineHardwareRecord, MachineRecord, MachineReliabilityRecord } from './records.js';
export type { CpuListingRecord, GoLiveRecord } from './go-live.js';
export { ReceiptRefusalCounts, type MachineVerificationRecord, type ReceiptRefusal } from './hardware-receipts.js';
/** A command queued for the machine's agent (the network test). */
export type { QueuedCommand };

/**
 * The channel side of hosting (heartbeats and go-live, telemetry, network measurements) and the host's own actions on
 * a machine. Pairing, enrollment and offers live with their own area.
 */
export interface HostingServices {
  /** The heartbeat handler: liveness and go-live; plain heartbeats are written behind. Returns whether written at once. */
  recordHeartbeat(machineId: string, msg: HeartbeatMessage, now: Date): Promise<boolean>;
  /** A heartbeat applied at once inside the caller's transaction (what recordHeartbeat does for state changes). */
  applyHeartbeat(db: Executor, machineId: string, msg: HeartbeatMessage, now: Date): Promise<void>;
  /** The 'telemetry' channel handler (inside the gateway's apply-once transaction). */
  ingestTelemetry(trx: Tx, machineId: string, msg: TelemetryMessage, now: Date): Promise<void>;
  /** The same for the telemetry of several machines in one transaction (the gateway's group commit). */
  ingestTelemetryGroup(trx: Tx, batches: ReadonlyArray<{ machineId: string; msg: TelemetryMessage }>, now: Date): Promise<void>;
  /** The 'nettest_receipt' channel handler (inside the gateway's apply-once transaction). */
  applyNettestReceipt(trx: Tx, machineId: string, msg: NettestReceiptMessage, now: Date): Promise<void>;
  queueNettest(caller: MachineCaller, machineId: string, commit?: CommitHook<QueuedCommand>): Promise<QueuedCommand>;
  /** The 'hardware_receipt' channel handler: the refusal's reason, or null when stored (hardware-receipts.ts). */
  applyHardwareReceipt(trx: Tx, machineId: string, msg: HardwareReceiptMessage, now: Date): Promise<ReceiptRefusal | null>;
  /** The owner or an admin asks for a self-test now (run_selftest, trigger `command`). */
  queueSelftest(caller: MachineCaller, machineId: string, commit?: CommitHook<QueuedCommand>): Promise<QueuedCommand>;
  /** Inside enrollment's transaction: the machine's verification row, its first self-test due at once. */
  scheduleEnrollmentSelftest(trx: Tx, machineId: string, ownerAccountId: string, now: Date): Promise<void>;
  /** The daily self-test worker's step: how many machines it asked. */
  queueDueSelftests(): Promise<number>;
  /** The public verification view's record; null for an unknown machine. */
  verification(machineId: string): Promise<MachineVerificationRecord | null>;
  /** Refused receipts by reason (ark_hardware_receipts_refused_total). */
  readonly receiptRefusals: ReceiptRefusalCounts;
  setGoLive(accountId: string, machineId: string, goLive: boolean, commit?: CommitHook<GoLiveRecord>): Promise<GoLiveRecord>;
  setCpuListing(accountId: string, machineId: string, listed: boolean, commit?: CommitHook<CpuListingRecord>): Promise<CpuListingRecord>;
  telemetry(machineId: string, windowS: number): Promise<BucketContribution[]>;
  readonly machines: MachineReads;
  /**
   * The process's heartbeat write-behind buffer. Readers ask it for last-seen (`lastHeartbeatAt`: stored, or newer
   * and still buffered); tests flush it.
   */
  readonly heartbeats: HeartbeatBuffer;
  /** Writes the buffered heartbeats (the flush a clean shutdown runs after the gateway closed). */
  close(): Promise<void>;
  /** Which replica holds each agent's channel (the relay's cross-replica routing). */
  readonly replicas: AgentReplicas;
}

export function buildHostingServices(deps: HostingDeps): HostingServices {
  return {
    replicas: agentReplicas(deps),
    recordHeartbeat: (machineId, msg, now) => recordHeartbeat(deps, machineId, msg, now),
    applyHeartbeat: (db, machineId, msg, now) => applyHeartbeat(db, machineId, msg, now, deps.admissions, deps.settings.onlineGraceMs),
    ingestTelemetry: (trx, machineId, msg, now) => ingestTelemetry(trx, machineId, msg, now),
    ingestTelemetryGroup: (trx, batches, now) => ingestTelemetryGroup(trx, batches, now),
    applyNettestReceipt: (trx, machineId, msg, now) => applyNettestReceipt(deps, trx, machineId, msg, now),
    queueNettest: (caller, machineId, commit) => queueNettest(deps, caller, machineId, commit),
    applyHardwareReceipt: (trx, machineId, msg, now) => applyHardwareReceipt(deps, trx, machineId, msg, now),
    queueSelftest: (caller, machineId, commit) => queueSelftest(deps, caller, machineId, commit),
    scheduleEnrollmentSelftest: (trx, machineId, ownerAccountId, now) => scheduleEnrollmentSelftest(trx, machineId, ownerAccountId, now),
    queueDueSelftests: () => queueDueSelftests(deps),
    verification: (machineId) => machineVerification(deps, machineId),
    receiptRefusals: deps.receiptRefusals,
    setGoLive: (accountId, machineId, goLive, commit) => setGoLive(deps, accountId, machineId, goLive, commit),
    setCpuListing: (accountId, machineId, listed, commit) => setCpuListing(deps, accountId, machineId, listed, commit),
    telemetry: (machineId, windowS) => machineTelemetry(deps, machineId, windowS),
    machines: machineReads(deps),
    heartbeats: deps.heartbeats,
    close: () => deps.heartbeats.close(),
  };
}
