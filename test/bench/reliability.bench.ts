// The reliability worker at fleet size: 10,000 machines (10 hosts), each with about 20 online intervals (with gaps)
// over the reliability window (the configuration's default, 30 days) and two offer versions, a fifth of them with a
// published maintenance window, seeded into the store directly, on SQLite and Postgres. A tenth of the machines are
// mostly offline, so the step holds them. The worker's step (`refreshReliability`: every machine scored and its row
// written, page by page) is timed twice, first with no stored scores (rows inserted, holds recorded) and then again
// (rows updated), each against the bare read of the same data in the same run: `loadReliabilityPage` over every page
// with the step's arguments, no scoring, no writes, taken just before the step it is compared with.
//
// Run: pnpm exec tsx test/bench/reliability.bench.ts [--machines 10000]
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { LIVENESS_GRACE_HEARTBEATS } from '@ark/control-plane/domain/machines/go-live';
import { refreshReliability } from '@ark/control-plane/services/reliability/index';
import type { Dialect } from '@ark/control-plane/store/db';
import { loadReliabilityPage } from '@ark/control-plane/store/reliability';
import { createTestApp, seedAccount } from '@ark/control-plane/testing/app';
import { fleetMachineRows } from './fleet-rows.js';

export interface DialectReliabilityFigures {
  machines: number;
  /** The configuration's reliability window the intervals cover. */
  windowDays: number;
  intervals: number;
  maintenanceWindows: number;
  seedSeconds: number;
  /** The bare read of every page (`loadReliabilityPage`), before the first step: no stored scores yet. */
  baselineReadMs: number;
  /** The first step: every machine scored, every row inserted, holds recorded (with their webhook events). */
  firstRefreshMs: number;
  firstRefreshUsPerMachine: number;
  /** firstRefreshMs / baselineReadMs */
  firstRatio: number;
  scored: number;
  /** Machines the first step held under the floor. */
  held: number;
  /** The bare read again, before the second step (now joined with the stored scores). */
  baselineReadAfterMs: number;
  /** The second step: every row updated, no hold changes. */
  secondRefreshMs: number;
  secondRefreshUsPerMachine: number;
  /** secondRefreshMs / baselineReadAfterMs */
  secondRatio: number;
  secondHeld: number;
  secondReleased: number;
}

export interface ReliabilityBenchFigures {
  loadAvgBefore: number;
  sqlite: DialectReliabilityFigures;
  postgres: DialectReliabilityFigures;
}

const DAY = 86_400_000;
const HOUR = 3_600_000;
const HOSTS = 10;
const INTERVALS_PER_MACHINE = 20;
/** The worker's page size (RELIABILITY_PAGE in services/reliability): the baseline reads the same pages. */
const PAGE = 500;

async function insertBatched(insert: (rows: Record<string, unknown>[]) => Promise<unknown>, rows: Record<string, unknown>[], size: number) {
  for (let i = 0; i < rows.length; i += size) await insert(rows.slice(i, i + size));
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

async function measure(dialect: Dialect, machineCount: number, log: (line: string) => void): Promise<DialectReliabilityFigures> {
  const t = await createTestApp(dialect);
  try {
    const settings = t.ctx.config.reliability;
    const onlineGraceMs = LIVENESS_GRACE_HEARTBEATS * t.ctx.config.heartbeatIntervalMs;
    const deps = { store: t.store, clock: t.clock, settings, onlineGraceMs };
    const seedStarted = performance.now();
    const now = t.clock.now().getTime();
    const at = (ms: number) => new Date(ms).toISOString();
    // The history starts an hour into the window (so nothing is pruned and both steps read the same intervals) and
    // is older than the minimum history, so every machine is scored as established.
    const historyFrom = now - settings.windowMs + HOUR;
    const slot = Math.floor((now - historyFrom) / INTERVALS_PER_MACHINE);
    const hosts = [];
    for (let h = 0; h < HOSTS; h++) hosts.push(await seedAccount(t.ctx, { role: 'host', scopes: ['host'] }));
    const db = t.store.db as any;
    const tokens: Record<string, unknown>[] = [];
    const machines: Record<string, unknown>[] = [];
    const offers: Record<string, unknown>[] = [];
    const versions: Record<string, unknown>[] = [];
    const windows: Record<string, unknown>[] = [];
    const intervals: Record<string, unknown>[] = [];
    let mostlyOffline = 0;
    for (let i = 0; i < machineCount; i++) {
      const host = hosts[i % HOSTS] as (typeof hosts)[number];
      const machineId = randomUUID();
      const tokenId = randomUUID();
      const offerId = randomUUID();
      const created = at(historyFrom - DAY);
      const rows = fleetMachineRows({
        index: i,
        machineId,
        tokenId,
        offerId,
        hostAccountId: host.accountId,
        gpuModel: 'NVIDIA GeForce RTX 4090',
        gpuCount: 1 + (i % 8),
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
          created_at: at(historyFrom - (version === 1n ? 2 : 1) * DAY),
          created_by_account_id: host.accountId,
        });
      }
      // A fifth of the machines publish a six-hour maintenance window (in the current version) over their 10th slot.
      const maintenance = i % 5 === 1;
      if (maintenance) {
        const from = historyFrom + 10 * slot;
        windows.push({ offer_id: offerId, version: 2n, position: 0, starts_at: at(from), ends_at: at(from + 6 * HOUR), reason: 'bench' });
      }
      // One interval per slot. Most machines: online all the slot but a gap of 5 to 20 minutes (above the floor). A
      // tenth: online two hours a slot (held). The maintenance ones are offline the window's six hours.
      const offline = i % 10 === 0;
      if (offline) mostlyOffline++;
      for (let s = 0; s < INTERVALS_PER_MACHINE; s++) {
        const from = historyFrom + s * slot + (maintenance && s === 10 ? 6 * HOUR : 0);
        const gap = 300_000 + ((i * 7919 + s * 104_729) % 900_000);
        const to = offline ? from + 2 * HOUR : Math.min(now, historyFrom + (s + 1) * slot - gap);
        intervals.push({ machine_id: machineId, started_at: at(from), ended_at: at(to) });
      }
    }
    log(
      `reliability bench (${dialect}): seeding ${machineCount} machines, ${intervals.length} online intervals, ` +
        `${windows.length} maintenance windows (window ${settings.windowMs / DAY} days, ${mostlyOffline} mostly offline)`,
    );
    await insertBatched((rows) => db.insertInto('enrollment_tokens').values(rows).execute(), tokens, 500);
    await insertBatched((rows) => db.insertInto('machines').values(rows).execute(), machines, 500);
    await insertBatched((rows) => db.insertInto('offers').values(rows).execute(), offers, 500);
    await insertBatched((rows) => db.insertInto('offer_versions').values(rows).execute(), versions, 500);
    await insertBatched((rows) => db.insertInto('offer_maintenance_windows').values(rows).execute(), windows, 500);
    await insertBatched((rows) => db.insertInto('machine_online_intervals').values(rows).execute(), intervals, 2000);
    const seedSeconds = round((performance.now() - seedStarted) / 1000);
    log(`reliability bench (${dialect}): seeded in ${seedSeconds} s`);

    // The bare read: the step's pages with the step's arguments, nothing scored or written.
    const since = new Date(now - settings.windowMs);
    const intervalsSince = new Date(now - settings.windowMs - onlineGraceMs);
    const readAll = async () => {
      const started = performance.now();
      let afterId: string | null = null;
      let read = 0;
      let intervalsRead = 0;
      for (;;) {
        const page = await loadReliabilityPage(t.store.db, { afterId, limit: PAGE, since, intervalsSince });
        if (page.length === 0) break;
        read += page.length;
        for (const machine of page) intervalsRead += machine.intervals.length;
        afterId = page[page.length - 1]?.machineId ?? null;
        if (page.length < PAGE) break;
      }
      if (read !== machineCount || intervalsRead !== intervals.length) {
        throw new Error(`baseline read ${read} machines and ${intervalsRead} intervals, seeded ${machineCount} and ${intervals.length}`);
      }
      return performance.now() - started;
    };
    const step = async () => {
      const started = performance.now();
      const result = await refreshReliability(deps);
      const ms = performance.now() - started;
      if (result.scored !== machineCount) throw new Error(`the step scored ${result.scored} of ${machineCount} machines`);
      return { ms, result };
    };

    await readAll(); // warm-up: both sides start from the same caches
    const baselineReadMs = await readAll();
    log(`reliability bench (${dialect}): baseline read (every page, no scores stored) ${Math.round(baselineReadMs)} ms`);
    const first = await step();
    const firstRatio = round(first.ms / baselineReadMs, 2);
    log(
      `reliability bench (${dialect}): first step ${Math.round(first.ms)} ms (${round((first.ms * 1000) / machineCount)} us/machine), ` +
        `ratio ${firstRatio} to the read; scored ${first.result.scored}, held ${first.result.held}`,
    );
    if (first.result.held !== mostlyOffline) throw new Error(`the first step held ${first.result.held}, expected ${mostlyOffline}`);
    const baselineReadAfterMs = await readAll();
    log(`reliability bench (${dialect}): baseline read (every page, scores stored) ${Math.round(baselineReadAfterMs)} ms`);
    const second = await step();
    const secondRatio = round(second.ms / baselineReadAfterMs, 2);
    log(
      `reliability bench (${dialect}): second step ${Math.round(second.ms)} ms (${round((second.ms * 1000) / machineCount)} us/machine), ` +
        `ratio ${secondRatio} to the read; scored ${second.result.scored}, newly held ${second.result.held}, released ${second.result.released}`,
    );
    return {
      machines: machineCount,
      windowDays: settings.windowMs / DAY,
      intervals: intervals.length,
      maintenanceWindows: windows.length,
      seedSeconds,
      baselineReadMs: Math.round(baselineReadMs),
      firstRefreshMs: Math.round(first.ms),
      firstRefreshUsPerMachine: round((first.ms * 1000) / machineCount),
      firstRatio,
      scored: first.result.scored,
      held: first.result.held,
      baselineReadAfterMs: Math.round(baselineReadAfterMs),
      secondRefreshMs: Math.round(second.ms),
      secondRefreshUsPerMachine: round((second.ms * 1000) / machineCount),
      secondRatio,
      secondHeld: second.result.held,
      secondReleased: second.result.released,
    };
  } finally {
    await t.destroy();
  }
}

export async function run(options: { machines?: number; log?: (line: string) => void } = {}): Promise<ReliabilityBenchFigures> {
  const machines = Math.max(100, Math.min(options.machines ?? 10_000, 100_000));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const loadAvgBefore = Math.round((loadavg()[0] as number) * 100) / 100;
  const sqlite = await measure('sqlite', machines, log);
  const postgres = await measure('postgres', machines, log);
  return { loadAvgBefore, sqlite, postgres };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { machines: { type: 'string' } } });
  const figures = await run({ machines: values.machines === undefined ? undefined : Number(values.machines) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
}
