import type { Services } from '../services/index.js';
import type { ChannelHandlers } from './handlers.js';

/**
 * The agent channel's handler table, filled in this one place from the services the composition root built (coder's
 * agentapi: one small use case per agent concern, behind one table). Each handler only passes the message on: the
 * use case opens or joins the transaction and decides.
 *
 * Order matters where a type has several handlers: a heartbeat records liveness first, then brings reconciling
 * jobs back. Reliable messages run inside the gateway's apply-once transaction.
 */
export function fillChannelHandlers(channel: ChannelHandlers, services: Pick<Services, 'jobs' | 'hosting'>): ChannelHandlers {
  const { jobs, hosting } = services;
  channel.onHeartbeat(async (machineId, msg, now) => {
    await hosting.recordHeartbeat(machineId, msg, now);
  });
  channel.onHeartbeat(async (machineId, msg, now) => {
    await jobs.reconcileFromHeartbeat(machineId, msg, now);
  });
  // The relay on another replica finds this one through the record (nothing is recorded for a single replica).
  channel.onConnect((machineId, now) => hosting.replicas.connected(machineId, now));
  channel.onDisconnect((machineId) => hosting.replicas.disconnected(machineId));
  channel.on('telemetry', (trx, machineId, msg, now) => hosting.ingestTelemetry(trx, machineId, msg, now));
  channel.on('nettest_receipt', (trx, machineId, msg, now) => hosting.applyNettestReceipt(trx, machineId, msg, now));
  channel.on('job_status', (trx, machineId, msg, now) => jobs.applyJobStatus(trx, machineId, msg, now));
  channel.on('meter_receipt', (trx, machineId, msg, now) => jobs.applyMeterReceipt(trx, machineId, msg, now));
  return channel;
}
