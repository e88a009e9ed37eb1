/** One host charge while it is pending (issue 24 item 4): it becomes payable at `matures_at`, once. */
export interface PendingEarningsTable {
  id: string;
  host_account_id: string;
  job_id: string;
  amount_micro: bigint;
  /** Still pending of it: an automatic credit takes from it; maturity moves it to payable (then 0). */
  remaining_micro: bigint;
  charged_at: string;
  matures_at: string;
  /** Set once, by the maturity worker's compare-and-set. */
  matured_at: string | null;
}

/** The automatic credit of a job that failed through the host (issue 24 item 3): one per job, by its primary key. */
export interface JobCreditsTable {
  job_id: string;
  renter_account_id: string;
  host_account_id: string;
  /** The job's close reason (agent_lost, job_failed, machine_lost, ...). */
  reason: string;
  /** The last verified-healthy point the credit counts from; null: the meter's start. */
  healthy_at: string | null;
  credit_micro: bigint;
  from_pending_micro: bigint;
  from_payable_micro: bigint;
  from_platform_micro: bigint;
  from_fees_micro: bigint;
  created_at: string;
}

export interface EarningsTables {
  pending_earnings: PendingEarningsTable;
  job_credits: JobCreditsTable;
}
