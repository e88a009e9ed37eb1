import { dailyBars, timelineBars, utilisationPoints } from './charts.js';
import { TELEMETRY_RETENTION_S } from '@ark/shared';
import { FormError, type ConsoleScope, action, field, page, perform, render, type Signed, signedIn } from './session.js';
import { usd, usdToMicro } from './format.js';
import { withdrawalAddresses } from './money-out.js';
import { type ChartSeries, telemetryCharts } from './telemetry.js';

const WINDOWS = ['1h', '6h', '24h', '48h'];
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

/** An instant typed into a form: RFC 3339 in UTC, as the API takes it. */
function instant(body: Record<string, string> | undefined, name: string, label: string): string {
  const value = field(body, name, label);
  if (!RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
    throw new FormError(`${label} must be an instant in UTC like 2026-12-01T00:00:00Z (got "${value}").`);
  }
  return value;
}

function wholeNumber(body: Record<string, string> | undefined, name: string, label: string): number {
  const value = field(body, name, label);
  if (!/^[0-9]{1,6}$/.test(value)) throw new FormError(`${label} must be a whole number of GiB (got "${value}").`);
  return Number(value);
}

/** A host's machines, each machine's telemetry and offer, pairing, earnings and the market. */
const CHART_DAYS = 30;
const DAY_MS = 86_400_000;

/** The host's job earnings since `sinceMs`, walking the earnings pages (newest first, bounded). */
async function jobEarningsSince(who: Signed, sinceMs: number): Promise<Array<{ at: string; micro: string }>> {
  const out: Array<{ at: string; micro: string }> = [];
  await who.api.walk('/api/v1/hosts/earnings?limit=100', (items: any[]) => {
    for (const item of items) if (item.kind === 'job') out.push({ at: item.at, micro: item.earned_micro });
    const oldest = items.at(-1);
    return !(oldest && Date.parse(oldest.at) < sinceMs);
  });
  return out;
}

export function registerHostPages(c: ConsoleScope): void {
  page(c, '/machines', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const machines = await who.api.call('GET', '/api/v1/hosts/machines?limit=100');
    return render(request, reply, 'machines', {
      title: 'Machines',
      account: who.account,
      machines: machines.status === 200 ? machines.body.items : [],
      refused: machines.status === 200 ? null : machines.body?.error?.message,
    });
  });

  page<{ id: string }>(c, '/machines/:id', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const id = encodeURIComponent(request.params.id);
    const window = WINDOWS.includes(request.query.window ?? '') ? (request.query.window as string) : '6h';
    const machine = await who.api.get(`/api/v1/hosts/machines/${id}`);
    const telemetry = await who.api.get(`/api/v1/hosts/machines/${id}/telemetry?window=${window}`);
    const charts: ChartSeries[] = telemetryCharts(machine, telemetry.buckets);
    const nowS = Math.floor(c.ctx.clock.now().getTime() / 1000);
    // Only the telemetry section when htmx refreshes it.
    const partial = request.headers['hx-request'] === 'true' && request.query.part === 'telemetry';
    return render(request, reply, partial ? 'telemetry' : 'machine', {
      title: machine.hostname,
      account: who.account,
      machine,
      window,
      windows: WINDOWS,
      retentionHours: TELEMETRY_RETENTION_S / 3600,
      charts,
      // The charts span the whole window, whatever part of it has data.
      chartData: JSON.stringify({ from: nowS - telemetry.window_s, to: nowS, series: charts }).replace(/</g, '\\u003c'),
      timeline: timelineBars(utilisationPoints(charts), nowS - telemetry.window_s, nowS),
      timelineLabel: charts.some((s) => s.gpu === -1) ? 'CPU utilisation' : 'GPU utilisation (mean of its GPUs)',
      now: new Date(nowS * 1000).toISOString().slice(0, 19) + 'Z',
    });
  });

  action<{ id: string }>(c, '/machines/:id/offer', async (request, reply) => {
    const id = encodeURIComponent(request.params.id);
    const back = `/console/machines/${id}`;
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, back, async () => {
      const body = request.body;
      const rate = usdToMicro(field(body, 'rate_usd_per_hour', 'The rate'));
      if (rate === null || rate === 0n) throw new FormError('The rate is a USD amount per hour with at most six decimals, like 1.25.');
      const machine = await who.api.get(`/api/v1/hosts/machines/${id}`);
      const committed = await who.api.post(`/api/v1/hosts/machines/${id}/offer`, {
        rate_micro_per_hour: rate.toString(),
        included_quotas: {
          included_disk_gib: wholeNumber(body, 'included_disk_gib', 'Included disk'),
          included_egress_gib: wholeNumber(body, 'included_egress_gib', 'Included egress'),
        },
        available_from: instant(body, 'available_from', 'Available from'),
        available_until: instant(body, 'available_until', 'Available until'),
        maintenance_windows: machine.offer?.maintenance_windows ?? [],
        expected_version: field(body, 'expected_version', 'The offer version'),
      });
      return `Offer saved at ${usd(rate)}/h: version ${committed.offer_version}. Running rentals keep their price.`;
    });
  });

  // Maintenance windows are part of the offer: each change commits a new offer version with the rest unchanged.
  const commitWindows = async (
    who: NonNullable<Awaited<ReturnType<typeof signedIn>>>,
    id: string,
    change: (windows: Array<{ starts_at: string; ends_at: string; reason: string }>) => typeof windows,
  ) => {
    const machine = await who.api.get(`/api/v1/hosts/machines/${id}`);
    const offer = machine.offer;
    if (!offer) throw new FormError('This machine has no offer yet: save one first.');
    return who.api.post(`/api/v1/hosts/machines/${id}/offer`, {
      rate_micro_per_hour: offer.rate_micro_per_hour,
      included_quotas: offer.included_quotas,
      available_from: offer.available_from,
      available_until: offer.available_until,
      maintenance_windows: change(offer.maintenance_windows),
      expected_version: offer.offer_version,
    });
  };

  action<{ id: string }>(c, '/machines/:id/maintenance', async (request, reply) => {
    const id = encodeURIComponent(request.params.id);
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, `/console/machines/${id}`, async () => {
      const window = {
        starts_at: instant(request.body, 'starts_at', 'The start'),
        ends_at: instant(request.body, 'ends_at', 'The end'),
        reason: field(request.body, 'reason', 'The reason'),
      };
      if (Date.parse(window.ends_at) <= Date.parse(window.starts_at)) throw new FormError('The window must end after it starts.');
      const committed = await commitWindows(who, id, (windows) => [...windows, window]);
      return `Maintenance window added: offer version ${committed.offer_version}.`;
    });
  });

  action<{ id: string }>(c, '/machines/:id/maintenance/remove', async (request, reply) => {
    const id = encodeURIComponent(request.params.id);
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, `/console/machines/${id}`, async () => {
      const startsAt = field(request.body, 'starts_at', 'The window');
      // The same instant however it is written (the API answers milliseconds).
      const at = Date.parse(startsAt);
      const committed = await commitWindows(who, id, (windows) => windows.filter((w) => Date.parse(w.starts_at) !== at));
      return `Maintenance window removed: offer version ${committed.offer_version}.`;
    });
  });

  action<{ id: string }>(c, '/machines/:id/nettest', async (request, reply) => {
    const id = encodeURIComponent(request.params.id);
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, `/console/machines/${id}`, async () => {
      await who.api.post(`/api/v1/hosts/machines/${id}/nettest`);
      return 'Network test queued: the result lands with the agent’s next contact.';
    });
  });

  page(c, '/pair', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const code = (request.query.code ?? '').trim().slice(0, 32);
    let lookup: { summary: unknown; expires_at: string } | null = null;
    let refused: string | null = null;
    if (code !== '') {
      const answer = await who.api.call('POST', '/api/v1/hosts/pairings/lookup', { user_code: code });
      if (answer.status === 200) lookup = answer.body;
      else refused = answer.body?.error?.message ?? `The service answered ${answer.status}.`;
    }
    return render(request, reply, 'pair', { title: 'Pair a rig', account: who.account, code, lookup, refused });
  });

  action(c, '/pair', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    return perform(c, reply, '/console/machines', async () => {
      const approved = await who.api.post('/api/v1/hosts/pairings/approve', {
        user_code: field(request.body, 'user_code', 'The pairing code'),
        go_live: request.body?.go_live === 'on',
      });
      return approved.go_live
        ? 'Approved: the rig enrolls at its next poll and its offer is listed once it is healthy.'
        : 'Approved: the rig enrolls at its next poll (not listed until you turn go-live on).';
    });
  });

  page(c, '/earnings', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const earnings = await who.api.call('GET', '/api/v1/hosts/earnings?limit=50');
    const now = c.ctx.clock.now();
    return render(request, reply, 'earnings', {
      title: 'Earnings',
      account: who.account,
      addresses: await withdrawalAddresses(who),
      chart: earnings.status === 200 ? dailyBars(await jobEarningsSince(who, now.getTime() - CHART_DAYS * DAY_MS), CHART_DAYS, now) : null,
      earnings: earnings.status === 200 ? earnings.body : null,
      refused: earnings.status === 200 ? null : earnings.body?.error?.message,
    });
  });

  page(c, '/market', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const window = /^[1-9][0-9]{0,2}d$/.test(request.query.window ?? '') ? (request.query.window as string) : '30d';
    const market = await who.api.call('GET', `/api/v1/hosts/market?window=${window}`);
    return render(request, reply, 'market', {
      title: 'Market',
      account: who.account,
      window,
      market: market.status === 200 ? market.body : null,
      refused: market.status === 200 ? null : market.body?.error?.message,
    });
  });
}
