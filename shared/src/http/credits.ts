import { type Static, Type } from '@sinclair/typebox';
import { MicroTotal, Nullable, Rfc3339Utc, Uuid } from '../formats.js';

/**
 * One automatic credit (issue 24): a job that failed through the host's side gave its renter back what it was charged
 * after the machine was last seen healthy. A line in the renter's balance history and in the host's earnings.
 */
export const JobCreditLine = Type.Object(
  {
    job_id: Uuid,
    /** The job's close reason: agent_lost, machine_lost, job_failed or gpu_lost. */
    reason: Type.String(),
    /** What the renter got back in all. */
    credit_micro: MicroTotal,
    /** The part taken from the host's earnings (pending first, then payable); the rest came from the platform. */
    from_host_micro: MicroTotal,
    /** The last verified-healthy point the credit counts from (the machine's last heartbeat); null: the meter's start. */
    healthy_at: Nullable(Rfc3339Utc),
    at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type JobCreditLine = Static<typeof JobCreditLine>;
