// Host market statistics: listing history and the worker's precomputed buckets. Timestamps ISO text.

/** One interval during which a machine's offer was listed; listed_until null while it still is. */
export interface OfferListingsTable {
  machine_id: string;
  listed_from: string;
  listed_until: string | null;
}

/** The single row (id 1) saying when the buckets were computed and under which minimum sample size. */
export interface MarketSnapshotsTable {
  id: bigint;
  computed_at: string;
  min_sample_size: bigint;
}

/** One (window, GPU model) bucket; metrics are null below the minimum sample size (never stored ungated). */
export interface MarketStatsTable {
  window_days: bigint;
  gpu_model: string;
  sample_size: bigint;
  listed_gpus: bigint | null;
  allocated_gpus: bigint | null;
  utilization_pct: bigint | null;
  fill_rate_pct: bigint | null;
  rental_sample_size: bigint | null;
  rate_p10_micro: bigint | null;
  rate_median_micro: bigint | null;
  rate_p90_micro: bigint | null;
  median_time_to_first_rental_s: bigint | null;
}

/** A host's own median listed rate for a model, for every window of at least from_window_days (until the next row). */
export interface MarketHostRatesTable {
  account_id: string;
  gpu_model: string;
  from_window_days: bigint;
  /** Null where the host has no machine of the model listed in those windows. */
  rate_micro: bigint | null;
}

export interface MarketTables {
  market_host_rates: MarketHostRatesTable;
  offer_listings: OfferListingsTable;
  market_snapshots: MarketSnapshotsTable;
  market_stats: MarketStatsTable;
}
