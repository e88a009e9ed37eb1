import type { Fleet } from '@ark/shared';
import type { FleetRecord } from '../services/operations/index.js';
import { reconciliationView } from './treasury.js';

// Operations as the wire shows them (shared/src/http/admin.ts): the fleet now (issue 13). The books are in
// views/ledger.ts, the reconciliation in views/treasury.ts.

export function fleetView(record: FleetRecord): Fleet {
  return {
    as_of: record.asOf.toISOString(),
    machines: { total: record.machines.total, online: record.machines.online, by_state: { ...record.machines.byState } },
    gpus: { ...record.gpus },
    jobs: { by_state: { ...record.jobs.byState }, active: record.jobs.active },
    ...(record.treasury ? { treasury: reconciliationView(record.treasury) } : {}),
  };
}
