import type { MeterState } from '../metering/receipts.js';
import type { JobRecord } from './job.js';
import { METERING_STATES } from './states.js';

/** The job's meter, as the receipt rules (domain/metering/receipts.ts) see it. */
export function meterStateOf(job: JobRecord): MeterState {
  return {
    metering: METERING_STATES.includes(job.state),
    fence: job.fence,
    lastSeq: job.meterSeq,
    meterStartedAt: job.meterStartedAt,
    meterFloorAt: job.meterFloorAt,
    meteredUntil: job.meteredUntil,
    durationLimitMs: job.durationLimitS * 1000n,
    hostCeilingAt: job.hostCeilingAt,
  };
}
