import { sql } from 'kysely';
import { iso } from '../clock.js';
import type { MarketBucket, MarketMachine } from '../domain/market/stats.js';
import { OCCUPYING_STATES } from '../domain/jobs/states.js';
import type { Executor, Store } from './db.js';
import { inTransactionWithRetry } from './transaction.js';

// Host market statistics: the listing history (written where an offer is listed) and the worker's buckets.

/** Opens a listing interval for the machine at `now` unless one is open already (called where an offer is listed). */
export async function openListing(db: Executor, machineId: string, now: Date): Promise<void> {
  const open = await db
    .selectFrom('offer_listings')
    .select('listed_from')
    .where('machine_id', '=', machineId)
    .where('listed_until', 'is', null)
    .executeTakeFirst();
  if (open) return;
  await db
    .insertInto('offer_listings')
    .values({ machine_id: machineId, listed_from: iso(now), listed_until: null })
    .execute();
}

const ms = (text: string) => Date.parse(text);

interface ListedRow {
  machine_id: string;
  owner_account_id: string;
  gpu_model: string | null;
  gpu_count: bigint;
  rate_micro_per_hour: bigint;
  listed_from: string;
  listed_until: string | null;
}

function listedMachines(db: Executor) {
  return db
    .selectFrom('machines as m')
    .innerJoin('offer_listings as l', 'l.machine_id', 'm.id')
    .innerJoin('offers as o', 'o.machine_id', 'm.id')
    .innerJoin('offer_versions as v', (join) => join.onRef('v.offer_id', '=', 'o.id').onRef('v.version', '=', 'o.current_version'))
    .select([
      'm.id as machine_id',
      'm.owner_account_id',
      'm.gpu_model',
      'm.gpu_count',
      'v.rate_micro_per_hour',
      'l.listed_from',
      'l.listed_until',
    ])
    .where('m.gpu_model', 'is not', null)
    .orderBy('m.id')
    .orderBy('l.listed_from');
}

function groupListings(rows: ListedRow[]): { machines: Map<string, MarketMachine>; owners: Map<string, Map<string, MarketMachine[]>> } {
  const machines = new Map<string, MarketMachine>();
  const owners = new Map<string, Map<string, MarketMachine[]>>();
  for (const row of rows) {
    const listing = { from: ms(row.listed_from), until: row.listed_until === null ? null : ms(row.listed_until) };
    const known = machines.get(row.machine_id);
    if (known) {
      (known.listings as Array<{ from: number; until: number | null }>).push(listing);
      continue;
    }
    const machine: MarketMachine = {
      gpuModel: row.gpu_model as string,
      gpuCount: Number(row.gpu_count),
      rateMicro: BigInt(row.rate_micro_per_hour),
      listings: [listing],
      firstRentalAt: null,
      lastRentalEnd: null,
      allocatedGpus: 0,
    };
    machines.set(row.machine_id, machine);
    const models = owners.get(row.owner_account_id) ?? new Map<string, MarketMachine[]>();
    owners.set(row.owner_account_id, models);
    const list = models.get(machine.gpuModel) ?? [];
    list.push(machine);
    models.set(machine.gpuModel, list);
  }
  return { machines, owners };
}

/**
 * Every machine that was ever listed, with its listing intervals, current rate and rental history reduced to what
 * the statistics use; machine identifiers stay in this function. `owners` groups the same machines by host and model,
 * for each host's own rate (stored under the host's account only).
 */
export async function loadMarketMachines(
  db: Executor,
): Promise<{ machines: MarketMachine[]; owners: Map<string, Map<string, MarketMachine[]>> }> {
  const { machines, owners } = groupListings(await listedMachines(db).execute());
  const occupying = [...OCCUPYING_STATES];
  const first = await db
    .selectFrom('jobs')
    .select(['machine_id', (eb) => eb.fn.min('created_at').as('first_at')])
    .groupBy('machine_id')
    .execute();
  for (const row of first) {
    const m = machines.get(row.machine_id);
    if (m && row.first_at !== null) m.firstRentalAt = ms(String(row.first_at));
  }
  const ended = await db
    .selectFrom('jobs')
    .select(['machine_id', sql<string>`max(coalesce(stopped_at, closed_at, state_changed_at))`.as('last_end')])
    .where('state', 'not in', occupying)
    .groupBy('machine_id')
    .execute();
  for (const row of ended) {
    const m = machines.get(row.machine_id);
    if (m && row.last_end !== null) m.lastRentalEnd = ms(String(row.last_end));
  }
  const held = await db
    .selectFrom('jobs')
    .select(['machine_id', (eb) => eb.fn.sum<bigint | string | number>('gpu_count').as('gpus')])
    .where('state', 'in', occupying)
    .groupBy('machine_id')
    .execute();
  for (const row of held) {
    const m = machines.get(row.machine_id);
    if (!m) continue;
    m.allocatedGpus = Number(row.gpus);
    m.lastRentalEnd = Number.POSITIVE_INFINITY;
  }
  return { machines: [...machines.values()], owners };
}

const int = (value: number | null) => (value === null ? null : BigInt(value));

/** Replaces the stored buckets with one snapshot, in one transaction. */
export async function replaceMarketStats(
  store: Store,
  snapshot: {
    computedAt: Date;
    minSampleSize: number;
    rows: Array<{ windowDays: number; bucket: MarketBucket }>;
    hostRates: Array<{ accountId: string; gpuModel: string; fromDays: number; rate: bigint | null }>;
  },
): Promise<void> {
  await inTransactionWithRetry(store, async (trx) => {
    await trx.deleteFrom('market_stats').execute();
    await trx.deleteFrom('market_snapshots').execute();
    await trx
      .insertInto('market_snapshots')
      .values({ id: 1n, computed_at: iso(snapshot.computedAt), min_sample_size: BigInt(snapshot.minSampleSize) })
      .execute();
    const values = snapshot.rows.map(({ windowDays, bucket: b }) => ({
      window_days: BigInt(windowDays),
      gpu_model: b.gpuModel,
      sample_size: BigInt(b.sampleSize),
      listed_gpus: int(b.listedGpus),
      allocated_gpus: int(b.allocatedGpus),
      utilization_pct: int(b.utilizationPct),
      fill_rate_pct: int(b.fillRatePct),
      rental_sample_size: int(b.rentalSampleSize),
      rate_p10_micro: b.rate?.p10 ?? null,
      rate_median_micro: b.rate?.median ?? null,
      rate_p90_micro: b.rate?.p90 ?? null,
      median_time_to_first_rental_s: b.medianTimeToFirstRentalS,
    }));
    for (let i = 0; i < values.length; i += 500)
      await trx
        .insertInto('market_stats')
        .values(values.slice(i, i + 500))
        .execute();
    await trx.deleteFrom('market_host_rates').execute();
    const rates = snapshot.hostRates.map((r) => ({
      account_id: r.accountId,
      gpu_model: r.gpuModel,
      from_window_days: BigInt(r.fromDays),
      rate_micro: r.rate,
    }));
    for (let i = 0; i < rates.length; i += 500)
      await trx
        .insertInto('market_host_rates')
        .values(rates.slice(i, i + 500))
        .execute();
  });
}

export async function readMarketSnapshot(db: Executor): Promise<{ computedAt: string; minSampleSize: number } | undefined> {
  const row = await db.selectFrom('market_snapshots').select(['computed_at', 'min_sample_size']).where('id', '=', 1n).executeTakeFirst();
  return row ? { computedAt: row.computed_at, minSampleSize: Number(row.min_sample_size) } : undefined;
}

const num = (value: bigint | null) => (value === null ? null : Number(value));

/** The stored buckets of one window (one model when given), by model. */
export async function readMarketStats(db: Executor, windowDays: number, gpuModel?: string): Promise<MarketBucket[]> {
  let query = db.selectFrom('market_stats').selectAll().where('window_days', '=', BigInt(windowDays)).orderBy('gpu_model');
  if (gpuModel !== undefined) query = query.where('gpu_model', '=', gpuModel);
  const rows = await query.execute();
  return rows.map((r) => ({
    gpuModel: r.gpu_model,
    sampleSize: Number(r.sample_size),
    listedGpus: num(r.listed_gpus),
    allocatedGpus: num(r.allocated_gpus),
    utilizationPct: num(r.utilization_pct),
    fillRatePct: num(r.fill_rate_pct),
    rentalSampleSize: num(r.rental_sample_size),
    rate:
      r.rate_p10_micro === null || r.rate_median_micro === null || r.rate_p90_micro === null
        ? null
        : { p10: BigInt(r.rate_p10_micro), median: BigInt(r.rate_median_micro), p90: BigInt(r.rate_p90_micro) },
    medianTimeToFirstRentalS: r.median_time_to_first_rental_s === null ? null : BigInt(r.median_time_to_first_rental_s),
  }));
}

/** The caller's own median listed rate per model for a window (the last change point at or below it). */
export async function readHostRates(db: Executor, accountId: string, windowDays: number): Promise<Map<string, bigint | null>> {
  const rows = await db
    .selectFrom('market_host_rates')
    .select(['gpu_model', 'rate_micro'])
    .where('account_id', '=', accountId)
    .where('from_window_days', '<=', BigInt(windowDays))
    .orderBy('gpu_model')
    .orderBy('from_window_days')
    .execute();
  const rates = new Map<string, bigint | null>();
  for (const row of rows) rates.set(row.gpu_model, row.rate_micro === null ? null : BigInt(row.rate_micro));
  return rates;
}
