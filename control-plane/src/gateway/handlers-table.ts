import type { Services } from '../services/index.js';
import type { ChannelHandlers, ChannelHandlerTable } from './handlers.js';

/**
 * The agent channel's handler table, filled in this one place from the services the composition root built (coder's
 * agentapi: one small use case per agent concern, behind one table). Each handler only passes the message on: the
 * use case opens or joins the transaction and decides.
 *
 * `messages` must name a handler for every agent message type of the catalog (shared/src/channel/catalog.ts) that
 * the gateway does not consume itself: a type added there without its line here fails the typecheck. Reliable
 * messages run inside the gateway's apply-once transaction.
 */
export function channelHandlerTable(services: Pick<Services, 'jobs' | 'hosting'>): ChannelHandlerTable {
  const { jobs, hosting } = services;
  return {
    messages: {
      // Liveness first, then reconciling jobs come back.
      heartbeat: async (machineId, msg, now) => {
        await hosting.recordHeartbeat(machineId, msg, now);
        await jobs.reconcileFromHeartbeat(machineId, msg, now);
      },
      // The readings, then the running jobs' GPUs: one gone from the batch fails its job `gpu_lost` (credited).
      telemetry: async (trx, machineId, msg, now) => {
        await hosting.ingestTelemetry(trx, machineId, msg, now);
        await jobs.checkGpusFromTelemetry(trx, machineId, msg, now);
      },
      nettest_receipt: (trx, machineId, msg, now) => hosting.applyNettestReceipt(trx, machineId, msg, now),
      job_status: (trx, machineId, msg, now) => jobs.applyJobStatus(trx, machineId, msg, now),
      job_event: (trx, machineId, msg, now) => jobs.applyJobEvent(trx, machineId, msg, now),
      meter_receipt: (trx, machineId, msg, now) => jobs.applyMeterReceipt(trx, machineId, msg, now),
      // A refused receipt is counted by the use case and still acknowledged: resending it would never help.
      hardware_receipt: async (trx, machineId, msg, now) => {
        await hosting.applyHardwareReceipt(trx, machineId, msg, now);
      },
    },
    // The relay on another replica finds this one through the record (nothing is recorded for a single replica).
    connected: (machineId, now) => hosting.replicas.connected(machineId, now),
    disconnected: (machineId) => hosting.replicas.disconnected(machineId),
    // A readiness report is verified as soon as it is committed (the verifier's worker is only the safety net).
    // Receipts arriving together are charged together (group commit across jobs, services/jobs/metering-batch.ts),
    // and telemetry arriving together is merged together.
    groups: {
      meter_receipt: (trx, receipts, now) => jobs.applyMeterReceipts(trx, receipts, now),
      // The readings of every machine in two upserts, then the GPUs of the few running jobs among them.
      telemetry: async (trx, batches, now) => {
        await hosting.ingestTelemetryGroup(trx, batches, now);
        await jobs.checkGpusFromTelemetryGroup(trx, batches, now);
      },
    },
    committed: (_machineId, msg) => {
      if (msg.t === 'job_status' && msg.status === 'ready') jobs.readiness.wake();
    },
  };
}

/** Installs the table into the registry the gateway dispatches through (tests add their spies after it). */
export function fillChannelHandlers(channel: ChannelHandlers, services: Pick<Services, 'jobs' | 'hosting'>): ChannelHandlers {
  return channel.install(channelHandlerTable(services));
}
