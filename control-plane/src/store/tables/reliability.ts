// Machine reliability: online intervals and the worker's scores. Timestamps ISO text, booleans 0/1 (bigint).

/** A run of heartbeats with no gap longer than the liveness grace: [started_at, ended_at] (first and last heartbeat). */
export interface MachineOnlineIntervalsTable {
  machine_id: string;
  started_at: string;
  ended_at: string;
}

/** A machine's reliability as the worker last computed it. */
export interface MachineReliabilityTable {
  machine_id: string;
  owner_account_id: string;
  /** Ten-thousandths, 0..10000. */
  score_e4: bigint;
  /** The machine's history is shorter than the minimum: never held, excluded by min_reliability. */
  is_new: bigint;
  /** Under the floor: not offered to new rentals. */
  held: bigint;
  held_since: string | null;
  online_s: bigint;
  /** The window's seconds that count (since the first heartbeat, outside published maintenance). */
  counted_s: bigint;
  penalized_jobs: bigint;
  window_from: string;
  /** The machine's first heartbeat (its history starts there); null before any. */
  history_from: string | null;
  computed_at: string;
}

export interface ReliabilityTables {
  machine_online_intervals: MachineOnlineIntervalsTable;
  machine_reliability: MachineReliabilityTable;
}
