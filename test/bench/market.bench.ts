// Host market statistics at fleet size: GET /api/v1/hosts/market with 10,000 listed machines (four GPU models, 10
// hosts) and a year of rental history (three jobs a machine, 30,000 in all), seeded into the store directly, on
// SQLite and Postgres. The market read is measured against a bare authenticated read (`GET /api/v1/account`, same
// API key, same in-process app) in alternating slices of the same run, and reported as a ratio; the worker's step
// (loading the history and storing every model's bucket for each of the 365 windows) is timed once.
//
// Run: pnpm exec tsx test/bench/market.bench.ts [--machines 10000] [--requests 300]
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Dialect } from '@ark/control-plane/store/db';
import { bearer, createTestApp, seedAccount } from '@ark/control-plane/testing/app';
import { fleetMachineRows } from './fleet-rows.js';

export interface DialectMarketFigures {
  machines: number;
  jobs: number;
  seedSeconds: number;
  /** One run of the market-stats worker's step. */
  refreshMs: number;
  bucketsStored: number;
  /** The read by a host that owns a tenth of the fleet (1,000 machines: its own median rate is read per request). */
  marketReadP50Ms: number;
  marketReadP99Ms: number;
  /** The same read by a host without machines (the stored buckets only). */
  marketReadNoMachinesP50Ms: number;
  baselineReadP50Ms: number;
  baselineReadP99Ms: number;
  /** marketReadP50Ms / baselineReadP50Ms */
  p50Ratio: number;
}

export interface MarketBenchFigures {
  loadAvgBefore: number;
  sqlite: DialectMarketFigures;
  postgres: DialectMarketFigures;
}

const MODELS = ['NVIDIA GeForce RTX 4090', 'NVIDIA H100 80GB HBM3', 'NVIDIA RTX A6000', 'NVIDIA L40S'];
const DAY = 86_400_000;
const HOSTS = 10;
const JOBS_PER_MACHINE = 3;

async function insertBatched(insert: (rows: Record<string, unknown>[]) => Promise<unknown>, rows: Record<string, unknown>[], size: number) {
  for (let i = 0; i < rows.length; i += size) await insert(rows.slice(i, i + size));
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const round = (n: number) => Math.round(n * 1000) / 1000;

async function measure(
  dialect: Dialect,
  machineCount: number,
  requests: number,
  log: (line: string) => void,
): Promise<DialectMarketFigures> {
  const t = await createTestApp(dialect);
  try {
    const seedStarted = performance.now();
    const now = t.clock.now().getTime();
    const at = (ms: number) => new Date(ms).toISOString();
    const hosts = [];
    for (let h = 0; h < HOSTS; h++) hosts.push(await seedAccount(t.ctx, { role: 'host', scopes: ['host'] }));
    const db = t.store.db as any;
    const tokens: Record<string, unknown>[] = [];
    const machines: Record<string, unknown>[] = [];
    const offers: Record<string, unknown>[] = [];
    const versions: Record<string, unknown>[] = [];
    const listings: Record<string, unknown>[] = [];
    const jobs: Record<string, unknown>[] = [];
    for (let i = 0; i < machineCount; i++) {
      const host = hosts[i % HOSTS] as (typeof hosts)[number];
      const machineId = randomUUID();
      const tokenId = randomUUID();
      const offerId = randomUUID();
      const model = MODELS[i % MODELS.length] as string;
      const gpus = 1 + (i % 8);
      // Listed at some point in the last year; the older half relisted once.
      const listedFrom = now - (1 + ((i * 7919) % 364)) * DAY;
      const created = at(listedFrom - 3600_000);
      const rows = fleetMachineRows({
        index: i,
        machineId,
        tokenId,
        offerId,
        hostAccountId: host.accountId,
        gpuModel: model,
        gpuCount: gpus,
        created,
        lastHeartbeatAt: at(now),
      });
      tokens.push(rows.token);
      machines.push(rows.machine);
      offers.push(rows.offer);
      for (const version of [1n, 2n]) {
        versions.push({
          offer_id: offerId,
          version,
          rate_micro_per_hour: 400_000n + BigInt((i * 104_729) % 3_000_000) + version,
          included_disk_gib: 100n,
          included_egress_gib: 50n,
          available_from: created,
          available_until: at(now + 365 * DAY),
          created_at: created,
          created_by_account_id: host.accountId,
        });
      }
      listings.push({ machine_id: machineId, listed_from: at(listedFrom), listed_until: i % 2 === 0 ? at(listedFrom + DAY) : null });
      if (i % 2 === 0) listings.push({ machine_id: machineId, listed_from: at(listedFrom + 2 * DAY), listed_until: null });
      for (let j = 0; j < JOBS_PER_MACHINE; j++) {
        const start = listedFrom + (j + 1) * ((now - listedFrom) / (JOBS_PER_MACHINE + 1));
        const occupying = j === JOBS_PER_MACHINE - 1 && i % 3 === 0;
        const jobId = randomUUID();
        jobs.push({
          id: jobId,
          account_id: (hosts[(i + 1) % HOSTS] as (typeof hosts)[number]).accountId,
          machine_id: machineId,
          host_account_id: host.accountId,
          quote_id: jobId,
          state: occupying ? 'RUNNING' : 'CLOSED',
          fence: 1n,
          job_version: 1n,
          budget_version: 1n,
          machine_rate_micro_per_hour: 1_000_000n,
          platform_fee_bps: 1000n,
          funded_budget_micro: 1_100_000n,
          duration_limit_s: 3600n,
          host_ceiling_at: at(now + DAY),
          funded_through: null,
          gpu_count: 1n,
          gpu_model: model,
          gpu_pci_addresses: '[]',
          image_digest: `ark/job@sha256:${'b'.repeat(64)}`,
          template_id: null,
          template_name: null,
          template_kind: null,
          launch_sealed: 'x',
          env_sealed: 'x',
          engine_key_sealed: null,
          accepted_runtime_ms: 0n,
          cumulative_charge_micro: 0n,
          charged_host_micro: 0n,
          charged_fee_micro: 0n,
          meter_started_at: null,
          meter_floor_at: null,
          last_meter_receipt_at: null,
          meter_seq: 0n,
          metered_until: null,
          access: null,
          pull_progress_pct: null,
          stop_requested_at: null,
          stop_reason: null,
          close_reason: occupying ? null : 'stopped',
          stopped_at: occupying ? null : at(Math.min(now - 1, start + 3600_000)),
          retrieval_until: null,
          closed_at: occupying ? null : at(Math.min(now - 1, start + 3600_000)),
          state_changed_at: at(start),
          event_seq: 0n,
          created_at: at(start),
          updated_at: at(start),
        });
      }
    }
    log(`market bench (${dialect}): seeding ${machineCount} machines and ${jobs.length} jobs`);
    await insertBatched((rows) => db.insertInto('enrollment_tokens').values(rows).execute(), tokens, 500);
    await insertBatched((rows) => db.insertInto('machines').values(rows).execute(), machines, 500);
    await insertBatched((rows) => db.insertInto('offers').values(rows).execute(), offers, 500);
    await insertBatched((rows) => db.insertInto('offer_versions').values(rows).execute(), versions, 500);
    await insertBatched((rows) => db.insertInto('offer_listings').values(rows).execute(), listings, 500);
    await insertBatched((rows) => db.insertInto('jobs').values(rows).execute(), jobs, 400);
    const seedSeconds = Math.round((performance.now() - seedStarted) / 100) / 10;

    const refreshStarted = performance.now();
    const bucketsStored = await t.ctx.services.market.refresh();
    const refreshMs = Math.round(performance.now() - refreshStarted);
    log(`market bench (${dialect}): worker step ${refreshMs} ms, ${bucketsStored} buckets`);

    const caller = hosts[0] as (typeof hosts)[number];
    const newcomer = await seedAccount(t.ctx, { role: 'host', scopes: ['host'] });
    const marketAs = async (apiKey: string) => {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/hosts/market?window=30d', headers: bearer(apiKey) });
      if (res.statusCode !== 200) throw new Error(`market: ${res.statusCode} ${res.body}`);
      if (res.json().models.length !== MODELS.length) throw new Error('market: a model is missing');
    };
    const market = () => marketAs(caller.apiKey);
    const marketNoMachines = () => marketAs(newcomer.apiKey);
    const baseline = async () => {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(caller.apiKey) });
      if (res.statusCode !== 200) throw new Error(`account: ${res.statusCode} ${res.body}`);
    };
    for (let i = 0; i < 20; i++) {
      await market();
      await baseline();
    }
    const marketMs: number[] = [];
    const baselineMs: number[] = [];
    const noMachinesMs: number[] = [];
    for (let i = 0; i < requests; i++) {
      for (const [fn, into] of [
        [market, marketMs],
        [baseline, baselineMs],
        [marketNoMachines, noMachinesMs],
      ] as const) {
        const started = performance.now();
        await fn();
        into.push(performance.now() - started);
      }
    }
    marketMs.sort((a, b) => a - b);
    baselineMs.sort((a, b) => a - b);
    noMachinesMs.sort((a, b) => a - b);
    const marketP50 = percentile(marketMs, 50);
    const baselineP50 = percentile(baselineMs, 50);
    return {
      machines: machineCount,
      jobs: jobs.length,
      seedSeconds,
      refreshMs,
      bucketsStored,
      marketReadP50Ms: round(marketP50),
      marketReadP99Ms: round(percentile(marketMs, 99)),
      marketReadNoMachinesP50Ms: round(percentile(noMachinesMs, 50)),
      baselineReadP50Ms: round(baselineP50),
      baselineReadP99Ms: round(percentile(baselineMs, 99)),
      p50Ratio: Math.round((marketP50 / baselineP50) * 100) / 100,
    };
  } finally {
    await t.destroy();
  }
}

export async function run(
  options: { machines?: number; requests?: number; log?: (line: string) => void } = {},
): Promise<MarketBenchFigures> {
  const machines = Math.max(100, Math.min(options.machines ?? 10_000, 100_000));
  const requests = Math.max(10, Math.min(options.requests ?? 300, 10_000));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const loadAvgBefore = Math.round((loadavg()[0] as number) * 100) / 100;
  const sqlite = await measure('sqlite', machines, requests, log);
  const postgres = await measure('postgres', machines, requests, log);
  return { loadAvgBefore, sqlite, postgres };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { machines: { type: 'string' }, requests: { type: 'string' } } });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const figures = await run({ machines: num(values.machines), requests: num(values.requests) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
