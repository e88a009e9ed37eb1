import { livenessAt, readinessOf } from '../../domain/machines/go-live.js';
import { DomainError } from '../../errors.js';
import type { Executor } from '../../store/db.js';
import { isHostingBlocked } from '../../store/hosts.js';
import type { MachineRow } from '../../store/machines.js';
import type { JobDeps } from './deps.js';

/**
 * A machine may be quoted and reserved while live, online and healthy, with GPUs or listed as a CPU machine, and its
 * host not blocked.
 */
export async function assertMachineAvailable(deps: JobDeps, db: Executor, machine: MachineRow, now: Date): Promise<void> {
  // Heartbeats that changed nothing may still be buffered in this process (store/heartbeats.ts).
  const lastHeartbeatAt = deps.heartbeats.lastHeartbeatAt(machine.id, machine.last_heartbeat_at);
  const liveness = livenessAt(lastHeartbeatAt ? new Date(lastHeartbeatAt) : null, now, deps.settings.heartbeatIntervalMs);
  const healthy = machine.healthy === null ? null : machine.healthy === 1n;
  if (readinessOf(machine.live_state, liveness, healthy) !== 'ready') {
    throw new DomainError('MACHINE_NOT_AVAILABLE', `The machine is ${machine.live_state === 'live' ? liveness : machine.live_state}.`);
  }
  if (machine.gpu_count === 0n && machine.cpu_listed !== 1n)
    throw new DomainError('MACHINE_NOT_AVAILABLE', 'The machine reports no GPU and its host has not listed it as a CPU machine.');
  if (await isHostingBlocked(db, machine.owner_account_id))
    throw new DomainError('MACHINE_NOT_AVAILABLE', 'The machine is not offered now.');
}
