import { JOB_STATES, type JobState, type MachineLiveState } from '@ark/shared';
import { iso } from '../../clock.js';
import type { Clock } from '../../clock.js';
import { FINAL_STATES, OCCUPYING_STATES } from '../../domain/jobs/states.js';
import { LIVENESS_GRACE_HEARTBEATS } from '../../domain/machines/go-live.js';
import type { Store } from '../../store/db.js';
import { jobStateCounts, listedGpus, machineStateCounts } from '../../store/fleet.js';
import type { ReconciliationRun } from '../treasury/reconcile.js';

const MACHINE_LIVE_STATES: readonly MachineLiveState[] = ['waiting', 'live', 'failed', 'off'];

export interface FleetRecord {
  asOf: Date;
  machines: { total: number; online: number; byState: Record<MachineLiveState, number> };
  gpus: { total: number; listed: number; allocated: number };
  jobs: { byState: Record<JobState, number>; active: number };
  /** This process's last reconciliation of the chain with the ledger; null before the first (or without a chain). */
  treasury: ReconciliationRun | null;
}

export interface FleetDeps {
  store: Store;
  clock: Clock;
  /** How often agents send heartbeats: a machine is online within LIVENESS_GRACE_HEARTBEATS of them. */
  heartbeatIntervalMs: number;
  /** The treasury's last reconciliation run in this process (services/treasury). */
  latestReconciliation: () => ReconciliationRun | null;
}

/**
 * The fleet now, for operators. Online is the liveness every other reader computes (domain/machines/go-live.ts
 * livenessAt: the last heartbeat within 3 heartbeat intervals), read from the table, which lags this process's
 * write-behind buffer by at most one flush interval (1 s, far inside the 45 s grace). Allocated GPUs are those of jobs
 * that hold their machine's devices (OCCUPYING_STATES, what reservations and the market statistics count); active
 * jobs are those not in a final state (CLOSED, FAILED), so STOPPED and CLEANING jobs are active but hold no GPU.
 */
export async function fleet(deps: FleetDeps): Promise<FleetRecord> {
  const now = deps.clock.now();
  const onlineSince = iso(new Date(now.getTime() - LIVENESS_GRACE_HEARTBEATS * deps.heartbeatIntervalMs));
  const db = deps.store.db;
  const machineRows = await machineStateCounts(db, onlineSince);
  const listed = await listedGpus(db, iso(now));
  const jobRows = await jobStateCounts(db);

  const machinesByState = Object.fromEntries(MACHINE_LIVE_STATES.map((s) => [s, 0])) as Record<MachineLiveState, number>;
  let machinesTotal = 0;
  let online = 0;
  let gpusTotal = 0;
  for (const row of machineRows) {
    machinesByState[row.state] = row.machines;
    machinesTotal += row.machines;
    online += row.online;
    gpusTotal += row.gpus;
  }

  const jobsByState = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  let active = 0;
  let allocated = 0;
  for (const row of jobRows) {
    jobsByState[row.state] = row.jobs;
    if (!FINAL_STATES.includes(row.state)) active += row.jobs;
    if (OCCUPYING_STATES.includes(row.state)) allocated += row.gpus;
  }

  return {
    asOf: now,
    machines: { total: machinesTotal, online, byState: machinesByState },
    gpus: { total: gpusTotal, listed, allocated },
    jobs: { byState: jobsByState, active },
    treasury: deps.latestReconciliation(),
  };
}
