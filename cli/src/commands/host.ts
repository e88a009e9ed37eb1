import type { Command } from 'commander';
import { action } from '../action.js';
import type { CommandContext } from '../context.js';
import { CliError, EXIT, usageError } from '../exit-codes.js';
import { durationToSeconds, formatGib, formatUsdc, usdcToMicro } from '../money.js';
import { registerCpuListingCommand } from './cpu-listing.js';
import { registerMachineVerifyCommands } from './machine-verify.js';
import { positiveInteger } from './offers.js';

// Hosts: their machines, offers (rate, quotas, window, maintenance), telemetry, network tests, earnings and market
// statistics (payouts: money-out.ts), over the host API (an API key with the host scope).

interface MaintenanceWindow {
  starts_at: string;
  ends_at: string;
  reason: string;
}

interface MachineOffer {
  offer_version: string;
  rate_micro_per_hour: string;
  total_rate_micro_per_hour: string;
  included_quotas: { included_disk_gib: number; included_egress_gib: number };
  available_from: string;
  available_until: string;
  maintenance_windows: MaintenanceWindow[];
  listed: boolean;
  readiness: string;
}

interface Machine {
  machine_id: string;
  hostname: string;
  manifest: { gpus?: Array<{ model?: string; vram_bytes?: string }> } & Record<string, unknown>;
  cpu_listing?: boolean;
  live: string;
  liveness: string;
  healthy: boolean | null;
  last_heartbeat_at: string | null;
  problems: string[];
  network: {
    download_mbps: number | null;
    upload_mbps: number | null;
    latency_ms: number | null;
    measured_at: string;
    error: string | null;
  } | null;
  offer: MachineOffer | null;
  reliability?: { score: string } & Record<string, unknown>;
  reliability_hold?: { message: string } | null;
  hardware?: { last_receipt_seq: number; score: number | null; verified_at: string | null };
  hardware_hold?: { message: string; contradictions: Array<{ message: string }>; ticket_id: string | null } | null;
}

interface Summary {
  min: number;
  avg: number;
  max: number;
}

function gpuText(machine: Machine): string {
  const gpus = machine.manifest.gpus ?? [];
  if (gpus.length === 0) return machine.cpu_listing ? 'CPU machine (listed)' : '(no GPU: not offered; ark machines cpu-listing ID)';
  return `${gpus.length} x ${gpus[0]?.model ?? '?'}`;
}

/** "now", "+30d", "+12h" or an RFC 3339 time -> RFC 3339. */
export function timeArgument(text: string, what: string): string {
  if (text === 'now') return new Date().toISOString();
  if (text.startsWith('+')) return new Date(Date.now() + durationToSeconds(text.slice(1), what) * 1000).toISOString();
  const parsed = new Date(text);
  if (Number.isNaN(parsed.getTime())) throw usageError(`${what} must be "now", "+30d" or an RFC 3339 time (got "${text}")`);
  return parsed.toISOString();
}

async function machineOf(ctx: CommandContext, machineId: string): Promise<Machine> {
  return ctx.api.get<Machine>(`/api/v1/hosts/machines/${encodeURIComponent(machineId)}`);
}

/** Commits the offer with `change` applied to the current one (version-checked: a concurrent change answers 409). */
async function commitOffer(
  ctx: CommandContext,
  machineId: string,
  change: (current: MachineOffer | null) => {
    rate_micro_per_hour: string;
    included_quotas: { included_disk_gib: number; included_egress_gib: number };
    available_from: string;
    available_until: string;
    maintenance_windows: MaintenanceWindow[];
  },
): Promise<{ machine_id: string; offer_id: string; offer_version: string; offer: ReturnType<typeof change> }> {
  const machine = await machineOf(ctx, machineId);
  const offer = change(machine.offer);
  const committed = await ctx.api.post<{ machine_id: string; offer_id: string; offer_version: string }>(
    `/api/v1/hosts/machines/${encodeURIComponent(machineId)}/offer`,
    { ...offer, expected_version: machine.offer?.offer_version ?? '0' },
    { idempotent: true },
  );
  return { ...committed, offer };
}

function showOffer(
  ctx: CommandContext,
  offer: {
    rate_micro_per_hour: string;
    included_quotas: { included_disk_gib: number; included_egress_gib: number };
    available_from: string;
    available_until: string;
    maintenance_windows: MaintenanceWindow[];
  },
): void {
  ctx.out.fields([
    ['rate', `${formatUsdc(offer.rate_micro_per_hour)} USDC/h (before the platform fee)`],
    ['included disk', `${offer.included_quotas.included_disk_gib} GiB`],
    ['included egress', `${offer.included_quotas.included_egress_gib} GiB`],
    ['available', `${offer.available_from} .. ${offer.available_until}`],
    ['maintenance', offer.maintenance_windows.map((w, i) => `#${i} ${w.starts_at} .. ${w.ends_at} ${w.reason}`).join('\n') || 'none'],
  ]);
}

const METRICS: Array<[string, string, (n: number) => string]> = [
  ['utilization_pct', 'util %', (n) => n.toFixed(0)],
  ['temperature_c', 'temp °C', (n) => n.toFixed(0)],
  ['power_watts', 'power W', (n) => n.toFixed(0)],
  ['memory_used_bytes', 'mem GiB', (n) => formatGib(BigInt(Math.round(n)))],
  ['fan_pct', 'fan %', (n) => n.toFixed(0)],
];
const HOST_METRICS: Array<[string, string, (n: number) => string]> = [
  ['cpu_utilization_pct', 'cpu %', (n) => n.toFixed(0)],
  ['load1', 'load1', (n) => n.toFixed(2)],
  ['memory_used_bytes', 'mem GiB', (n) => formatGib(BigInt(Math.round(n)))],
  ['disk_free_bytes', 'disk free GiB', (n) => formatGib(BigInt(Math.round(n)))],
];

export function registerHostCommands(program: Command): void {
  const machines = program.command('machines').description('Your machines (hosts), and any machine’s signed hardware receipts');
  registerMachineVerifyCommands(machines);
  registerCpuListingCommand(machines);
  machines
    .command('list', { isDefault: true })
    .description('Your machines with their state, reliability and offer')
    .action(
      action(async (ctx) => {
        const items = await ctx.api.all<Machine>('/api/v1/hosts/machines');
        ctx.out.result({ items }, () =>
          ctx.out.table(
            ['MACHINE', 'HOSTNAME', 'GPUS', 'LIVE', 'ONLINE', 'HEALTHY', 'RELIABILITY', 'RATE USDC/h', 'LISTED'],
            items.map((m) => [
              m.machine_id,
              m.hostname,
              gpuText(m),
              m.live,
              m.liveness,
              m.healthy === null ? '-' : m.healthy ? 'yes' : 'no',
              m.reliability?.score ?? 'unscored',
              m.offer === null ? '-' : formatUsdc(m.offer.rate_micro_per_hour),
              m.offer === null ? '-' : m.offer.listed ? 'yes' : 'no',
            ]),
          ),
        );
      }),
    );
  machines
    .command('approve <user-code>')
    .description('Approve a pairing: the code `ark-agent pair` printed on the rig (the machine enrolls into your account)')
    .option('--no-go-live', 'enroll the machine without putting it live (it stays unlisted until it goes live)')
    .action(
      action(async (ctx, userCode: string, options: { goLive: boolean }) => {
        const approved = await ctx.api.post<{ approved: boolean; go_live: boolean; summary: { hostname?: string; gpu_count?: number } }>(
          '/api/v1/hosts/pairings/approve',
          { user_code: userCode.trim().toUpperCase(), go_live: options.goLive },
          { idempotent: true },
        );
        ctx.out.result(approved, () =>
          ctx.out.line(
            `Approved ${userCode}: ${approved.summary.hostname ?? 'the machine'} (${approved.summary.gpu_count ?? 0} GPUs) enrolls now` +
              (approved.go_live ? ' and goes live once its agent runs.' : ', not live.'),
          ),
        );
      }),
    );
  machines
    .command('show <machine-id>')
    .description('One machine: liveness, health, network, reliability, offer')
    .action(
      action(async (ctx, machineId: string) => {
        const m = await machineOf(ctx, machineId);
        ctx.out.result(m, () => {
          ctx.out.fields([
            ['machine', m.machine_id],
            ['hostname', m.hostname],
            ['GPUs', gpuText(m)],
            ['live', m.live],
            ['online', m.liveness],
            ['healthy', m.healthy],
            ['problems', m.problems.join('; ') || 'none'],
            ['last heartbeat', m.last_heartbeat_at],
            [
              'network',
              m.network === null
                ? 'not measured'
                : (m.network.error ??
                  `down ${m.network.download_mbps} Mbps, up ${m.network.upload_mbps} Mbps, ${m.network.latency_ms} ms (${m.network.measured_at})`),
            ],
            ['reliability', m.reliability?.score ?? 'unscored'],
            ['held', m.reliability_hold?.message ?? 'no'],
            ['hardware score', m.hardware?.score ?? 'none'],
            ['verified at', m.hardware?.verified_at ?? 'never'],
            [
              'unlisted (hardware)',
              m.hardware_hold
                ? `${m.hardware_hold.contradictions.map((c) => c.message).join(' ')} (ticket ${m.hardware_hold.ticket_id})`
                : 'no',
            ],
          ]);
          if (m.offer !== null) showOffer(ctx, m.offer);
        });
      }),
    );

  const offer = program.command('offer').description('Your machines’ offers');
  offer
    .command('set <machine-id>')
    .description('Publish a new offer version; what is not given keeps its current value')
    .option('--rate <usdc>', 'rate in USDC an hour (before the platform fee)')
    .option('--disk-gib <n>', 'included disk, GiB')
    .option('--egress-gib <n>', 'included egress, GiB')
    .option('--from <time>', 'available from: now, +1d or RFC 3339')
    .option('--until <time>', 'available until: +30d or RFC 3339')
    .action(
      action(
        async (ctx, machineId: string, options: { rate?: string; diskGib?: string; egressGib?: string; from?: string; until?: string }) => {
          const committed = await commitOffer(ctx, machineId, (current) => {
            const rate = options.rate === undefined ? current?.rate_micro_per_hour : usdcToMicro(options.rate, '--rate').toString();
            if (rate === undefined) throw usageError('the machine has no offer yet: give --rate');
            return {
              rate_micro_per_hour: rate,
              included_quotas: {
                included_disk_gib:
                  options.diskGib === undefined
                    ? (current?.included_quotas.included_disk_gib ?? 0)
                    : nonNegative(options.diskGib, '--disk-gib'),
                included_egress_gib:
                  options.egressGib === undefined
                    ? (current?.included_quotas.included_egress_gib ?? 0)
                    : nonNegative(options.egressGib, '--egress-gib'),
              },
              available_from:
                options.from === undefined ? (current?.available_from ?? new Date().toISOString()) : timeArgument(options.from, '--from'),
              available_until:
                options.until === undefined
                  ? (current?.available_until ?? new Date(Date.now() + 30 * 86_400_000).toISOString())
                  : timeArgument(options.until, '--until'),
              maintenance_windows: current?.maintenance_windows ?? [],
            };
          });
          ctx.out.result(committed, () => {
            ctx.out.line(`Offer version ${committed.offer_version} committed for ${machineId}`);
            showOffer(ctx, committed.offer);
          });
        },
      ),
    );
  const maintenance = offer.command('maintenance').description('Maintenance windows of an offer');
  maintenance
    .command('add <machine-id>')
    .description('Add a maintenance window (a new offer version)')
    .requiredOption('--start <time>', 'start: +1d or RFC 3339')
    .requiredOption('--end <time>', 'end: +26h or RFC 3339')
    .option('--reason <reason>', 'why', 'maintenance')
    .action(
      action(async (ctx, machineId: string, options: { start: string; end: string; reason: string }) => {
        const window = {
          starts_at: timeArgument(options.start, '--start'),
          ends_at: timeArgument(options.end, '--end'),
          reason: options.reason,
        };
        const committed = await commitOffer(ctx, machineId, (current) => {
          if (current === null) throw usageError('the machine has no offer yet: set one with `ark offer set`');
          return { ...pickOffer(current), maintenance_windows: [...current.maintenance_windows, window] };
        });
        ctx.out.result(committed, () => {
          ctx.out.line(`Offer version ${committed.offer_version} committed for ${machineId}`);
          showOffer(ctx, committed.offer);
        });
      }),
    );
  maintenance
    .command('remove <machine-id> <index>')
    .description('Remove a maintenance window by its number (as `ark machines show` lists them)')
    .action(
      action(async (ctx, machineId: string, indexText: string) => {
        const index = nonNegative(indexText, 'index');
        const committed = await commitOffer(ctx, machineId, (current) => {
          if (current === null || index >= current.maintenance_windows.length) throw usageError(`no maintenance window #${index}`);
          return { ...pickOffer(current), maintenance_windows: current.maintenance_windows.filter((_, i) => i !== index) };
        });
        ctx.out.result(committed, () => {
          ctx.out.line(`Offer version ${committed.offer_version} committed for ${machineId}`);
          showOffer(ctx, committed.offer);
        });
      }),
    );

  program
    .command('telemetry <machine-id>')
    .description('Per-GPU and host metrics over a window as sparklines (averages of 5-minute buckets) with min/avg/max')
    .option('--window <window>', 'like 30m, 6h or 48h (the retention)', '6h')
    .action(
      action(async (ctx, machineId: string, options: { window: string }) => {
        const telemetry = await ctx.api.get<{
          machine_id: string;
          window_s: number;
          bucket_s: number;
          buckets: Array<{
            bucket: string;
            samples: number;
            devices: Array<Record<string, unknown> & { pci_address: string }>;
            host?: Record<string, unknown>;
          }>;
        }>(`/api/v1/hosts/machines/${encodeURIComponent(machineId)}/telemetry`, { query: { window: options.window } });
        const { default: sparkly } = await import('sparkly');
        ctx.out.result(telemetry, () => {
          const rows: string[][] = [];
          const series = (pick: (bucket: (typeof telemetry.buckets)[number]) => Summary | undefined) => telemetry.buckets.map(pick);
          const row = (who: string, label: string, format: (n: number) => string, values: Array<Summary | undefined>) => {
            const present = values.filter((v): v is Summary => v !== undefined);
            if (present.length === 0) return;
            const averages = values.map((v) => (v === undefined ? Number.NaN : v.avg));
            rows.push([
              who,
              label,
              sparkly(averages),
              format(Math.min(...present.map((v) => v.min))),
              format(present.reduce((sum, v) => sum + v.avg, 0) / present.length),
              format(Math.max(...present.map((v) => v.max))),
            ]);
          };
          const addresses = [...new Set(telemetry.buckets.flatMap((b) => b.devices.map((d) => d.pci_address)))].sort();
          for (const address of addresses) {
            for (const [field, label, format] of METRICS) {
              row(
                address,
                label,
                format,
                series((b) => b.devices.find((d) => d.pci_address === address)?.[field] as Summary | undefined),
              );
            }
          }
          for (const [field, label, format] of HOST_METRICS)
            row(
              'host',
              label,
              format,
              series((b) => b.host?.[field] as Summary | undefined),
            );
          ctx.out.line(`${telemetry.buckets.length} buckets of ${telemetry.bucket_s} s over ${telemetry.window_s} s`);
          if (rows.length === 0) ctx.out.line('No telemetry in this window.');
          else ctx.out.table(['DEVICE', 'METRIC', 'TREND', 'MIN', 'AVG', 'MAX'], rows);
        });
      }),
    );

  program
    .command('nettest <machine-id>')
    .description('Queue a network measurement on the machine; --wait waits for its result')
    .option('--wait', 'wait for the agent’s receipt')
    .option('--timeout <duration>', 'how long to wait', '2m')
    .action(
      action(async (ctx, machineId: string, options: { wait?: boolean; timeout: string }) => {
        const before = (await machineOf(ctx, machineId)).network?.measured_at ?? null;
        const queued = await ctx.api.post<{ machine_id: string; command_id: string; state: string }>(
          `/api/v1/hosts/machines/${encodeURIComponent(machineId)}/nettest`,
          undefined,
          { idempotent: true },
        );
        if (!options.wait) {
          ctx.out.result(queued, () => ctx.out.line(`Network test ${queued.command_id} queued (${queued.state})`));
          return;
        }
        ctx.out.note(`Network test ${queued.command_id} queued; waiting for the agent…`);
        const deadline = Date.now() + durationToSeconds(options.timeout, '--timeout') * 1000;
        for (;;) {
          const network = (await machineOf(ctx, machineId)).network;
          if (network !== null && network.measured_at !== before) {
            ctx.out.result({ ...queued, network }, () =>
              ctx.out.line(
                network.error === null
                  ? `down ${network.download_mbps} Mbps, up ${network.upload_mbps} Mbps, latency ${network.latency_ms} ms`
                  : `measurement failed: ${network.error}`,
              ),
            );
            return;
          }
          if (Date.now() > deadline) throw new CliError(EXIT.apiError, 'NETTEST_TIMEOUT', 'no network measurement arrived in time');
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      }),
    );

  program
    .command('earnings')
    .description('Pending, payable, locked and paid-out earnings, with recent history')
    .option('--limit <n>', 'history items', '20')
    .action(
      action(async (ctx, options: { limit: string }) => {
        const earnings = await ctx.api.get<{
          pending_micro: string;
          next_matures_at: string | null;
          payable_micro: string;
          locked_micro: string;
          paid_out_micro: string;
          items: Array<{
            kind: string;
            job_id?: string;
            withdrawal_id?: string;
            earned_micro?: string;
            amount_micro?: string;
            state?: string;
            at: string;
          }>;
          next_cursor: string | null;
          credits: Array<{ job_id: string; reason: string; credit_micro: string; from_host_micro: string; at: string }>;
        }>('/api/v1/hosts/earnings', { query: { limit: positiveInteger(options.limit, '--limit') } });
        ctx.out.result(earnings, () => {
          ctx.out.fields([
            [
              'pending',
              `${formatUsdc(earnings.pending_micro)} USDC${earnings.next_matures_at ? ` (next payable at ${earnings.next_matures_at})` : ''}`,
            ],
            ['payable', `${formatUsdc(earnings.payable_micro)} USDC`],
            ['locked in payouts', `${formatUsdc(earnings.locked_micro)} USDC`],
            ['paid out', `${formatUsdc(earnings.paid_out_micro)} USDC`],
          ]);
          if (earnings.items.length > 0) {
            ctx.out.table(
              ['AT', 'KIND', 'JOB / PAYOUT', 'USDC', 'STATE'],
              earnings.items.map((i) => [
                i.at,
                i.kind,
                i.job_id ?? i.withdrawal_id,
                formatUsdc(i.earned_micro ?? i.amount_micro ?? '0'),
                i.state,
              ]),
            );
          }
          if (earnings.credits.length > 0) {
            // Automatic credits to renters of jobs that failed on this host's machines (issue 24).
            ctx.out.table(
              ['AT', 'CREDITED JOB', 'REASON', 'FROM YOUR EARNINGS USDC'],
              earnings.credits.map((c) => [c.at, c.job_id, c.reason, formatUsdc(c.from_host_micro)]),
            );
          }
        });
      }),
    );

  program
    .command('market')
    .description('Market statistics per GPU model (utilization, fill rate, rate percentiles, your rate)')
    .option('--gpu-model <model>', 'one GPU model')
    .option('--window <window>', 'like 30d (1..365 days)', '30d')
    .action(
      action(async (ctx, options: { gpuModel?: string; window: string }) => {
        const market = await ctx.api.get<{
          window_days: number;
          from: string;
          to: string;
          min_sample_size: number;
          models: Array<{
            gpu_model: string;
            sample_size: number;
            listed_gpus: number | null;
            allocated_gpus: number | null;
            utilization_pct: number | null;
            fill_rate_pct: number | null;
            rate_micro: { p10_micro: string; median_micro: string; p90_micro: string } | null;
            median_time_to_first_rental_s: string | null;
            your_rate_micro: string | null;
          }>;
        }>('/api/v1/hosts/market', { query: { gpu_model: options.gpuModel, window: options.window } });
        ctx.out.result(market, () => {
          ctx.out.line(`${market.window_days} days [${market.from}, ${market.to}); metrics need ${market.min_sample_size} listed machines`);
          ctx.out.table(
            ['GPU MODEL', 'MACHINES', 'GPUS', 'UTIL %', 'FILL %', 'P10', 'MEDIAN', 'P90', 'FIRST RENTAL', 'YOUR RATE'],
            market.models.map((m) => [
              m.gpu_model,
              m.sample_size,
              m.listed_gpus === null ? '-' : `${m.allocated_gpus}/${m.listed_gpus}`,
              m.utilization_pct,
              m.fill_rate_pct,
              m.rate_micro === null ? '-' : formatUsdc(m.rate_micro.p10_micro),
              m.rate_micro === null ? '-' : formatUsdc(m.rate_micro.median_micro),
              m.rate_micro === null ? '-' : formatUsdc(m.rate_micro.p90_micro),
              m.median_time_to_first_rental_s === null ? '-' : `${m.median_time_to_first_rental_s} s`,
              m.your_rate_micro === null ? '-' : formatUsdc(m.your_rate_micro),
            ]),
          );
        });
      }),
    );
}

function pickOffer(current: MachineOffer) {
  return {
    rate_micro_per_hour: current.rate_micro_per_hour,
    included_quotas: current.included_quotas,
    available_from: current.available_from,
    available_until: current.available_until,
    maintenance_windows: current.maintenance_windows,
  };
}

function nonNegative(text: string, what: string): number {
  if (!/^(0|[1-9][0-9]*)$/.test(text)) throw usageError(`${what} must be a whole number (got "${text}")`);
  return Number(text);
}
