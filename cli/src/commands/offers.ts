import type { Command } from 'commander';
import { action } from '../action.js';
import { usageError } from '../exit-codes.js';
import { formatGib, formatUsdc, gibToBytes, usdcToMicro } from '../money.js';

// Renters find machines (GET /api/v1/offers) and templates (GET /api/v1/templates). Filters the API has go into its
// query; the GPU count and the template-fit filter and every sort run here, over the pages fetched.

export interface Offer {
  offer_id: string;
  machine_id: string;
  expected_version: string;
  readiness: string;
  total_rate_micro_per_hour: string;
  gpu_count?: number;
  model?: string;
  vram_bytes?: string;
  measured_bandwidth_mbps?: string;
  region?: string;
  fit?: { fits: boolean; headroom_bytes: string; shortfall_bytes: string };
  reliability?: { score: string; new: boolean };
  verification?: { score: number | null; verified_at: string | null };
  available_until: string;
}

const SORTS: Record<string, (a: Offer, b: Offer) => number> = {
  price: (a, b) => compareBig(a.total_rate_micro_per_hour, b.total_rate_micro_per_hour),
  '-price': (a, b) => compareBig(b.total_rate_micro_per_hour, a.total_rate_micro_per_hour),
  vram: (a, b) => compareBig(b.vram_bytes ?? '0', a.vram_bytes ?? '0'),
  gpus: (a, b) => (b.gpu_count ?? 0) - (a.gpu_count ?? 0),
  reliability: (a, b) => Number(b.reliability?.score ?? 0) - Number(a.reliability?.score ?? 0),
  score: (a, b) => (b.verification?.score ?? -1) - (a.verification?.score ?? -1),
  bandwidth: (a, b) => compareBig(b.measured_bandwidth_mbps ?? '0', a.measured_bandwidth_mbps ?? '0'),
};

function compareBig(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

interface SearchOptions {
  gpuModel?: string;
  minGpus?: string;
  minVramGib?: string;
  maxPrice?: string;
  region?: string;
  minReliability?: string;
  minScore?: string;
  template?: string;
  fits?: boolean;
  availableAt?: string;
  sort: string;
  limit: string;
}

export function registerOfferCommands(program: Command): void {
  const offers = program.command('offers').description('Machines offered for rent');
  offers
    .command('search')
    .description('Search offers: filters map onto GET /api/v1/offers; --min-gpus, --fits and --sort apply to what it answers')
    .option('--gpu-model <model>', 'exact GPU model, e.g. "NVIDIA L4"')
    .option('--min-gpus <n>', 'at least this many GPUs')
    .option('--min-vram-gib <gib>', 'every GPU has at least this much VRAM')
    .option('--max-price <usdc>', 'total rate (fee included) at most this many USDC an hour')
    .option('--region <region>', 'region')
    .option('--min-reliability <score>', 'reliability score 0..1 (e.g. 0.99)')
    .option('--min-score <score>', 'verified hardware score at least this (signed self-test receipts; `ark machines verify` checks them)')
    .option('--template <template-id>', 'adds each offer’s fit for this template')
    .option('--fits', 'only offers the --template fits')
    .option('--available-at <time>', 'available at this RFC 3339 time, outside maintenance')
    .option('--sort <key>', `one of ${Object.keys(SORTS).join(', ')}`, 'price')
    .option('--limit <n>', 'at most this many offers', '20')
    .action(
      action(async (ctx, options: SearchOptions) => {
        const sort = SORTS[options.sort];
        if (sort === undefined) throw usageError(`--sort must be one of ${Object.keys(SORTS).join(', ')}`);
        if (options.fits && options.template === undefined) throw usageError('--fits needs --template');
        const limit = positiveInteger(options.limit, '--limit');
        const minGpus = options.minGpus === undefined ? 0 : positiveInteger(options.minGpus, '--min-gpus');
        const query = {
          gpu_model: options.gpuModel,
          min_vram_bytes: options.minVramGib === undefined ? undefined : gibToBytes(options.minVramGib, '--min-vram-gib'),
          max_rate_micro_per_hour: options.maxPrice === undefined ? undefined : usdcToMicro(options.maxPrice, '--max-price').toString(),
          region: options.region,
          min_reliability: options.minReliability,
          min_score: options.minScore,
          template_id: options.template,
          available_at: options.availableAt,
          // The RELIABILITY and SCORE columns and their sorts: the contract's OfferSummary carries neither unless asked.
          include: 'reliability,verification',
        };
        // Sorting needs the whole result: up to 1000 offers, 100 a page.
        const all = await ctx.api.all<Offer>('/api/v1/offers', { query, max: 1000 });
        const items = all
          .filter((offer) => (offer.gpu_count ?? 1) >= minGpus)
          .filter((offer) => !options.fits || offer.fit?.fits === true)
          .sort(sort)
          .slice(0, limit);
        ctx.out.result({ items }, () =>
          ctx.out.table(
            [
              'OFFER',
              'GPU',
              'GPUS',
              'VRAM GiB',
              'USDC/h',
              'REGION',
              'RELIABILITY',
              'SCORE',
              'VERIFIED',
              'READY',
              ...(options.template ? ['FIT'] : []),
            ],
            items.map((o) => [
              o.offer_id,
              // The contract's CPU offer: no gpu_count and no model (the machine is rented whole).
              o.gpu_count === undefined ? 'CPU' : (o.model ?? '(none)'),
              o.gpu_count ?? '-',
              formatGib(o.vram_bytes),
              formatUsdc(o.total_rate_micro_per_hour),
              o.region,
              o.reliability === undefined ? 'unscored' : `${o.reliability.score}${o.reliability.new ? ' (new)' : ''}`,
              o.verification?.score ?? '-',
              o.verification?.verified_at ?? 'never',
              o.readiness,
              ...(options.template
                ? [o.fit === undefined ? '-' : o.fit.fits ? 'fits' : `short ${formatGib(o.fit.shortfall_bytes)} GiB`]
                : []),
            ]),
          ),
        );
      }),
    );

  const templates = program.command('templates').description('The public template catalog');
  templates
    .command('list', { isDefault: true })
    .description('Published templates (no credential needed)')
    .option('--kind <kind>', 'model, classical or custom')
    .option('--min-vram-gib <gib>', 'templates that need at most this much VRAM')
    .option('--backend <backend>', 'cuda, rocm, sycl, vulkan or metal')
    .action(
      action(async (ctx, options: { kind?: string; minVramGib?: string; backend?: string }) => {
        const items = await ctx.api.all<{
          template_id: string;
          name: string;
          kind: string;
          tier?: string;
          vram_fit: { min_vram_bytes: string };
          runtimes: Array<{ backend: string }>;
        }>('/api/v1/templates', {
          anonymous: !ctx.api.hasCredential,
          query: {
            kind: options.kind,
            backend: options.backend,
            min_vram_bytes: options.minVramGib === undefined ? undefined : gibToBytes(options.minVramGib, '--min-vram-gib'),
          },
        });
        const filtered = options.kind !== undefined || options.backend !== undefined || options.minVramGib !== undefined;
        if (items.length === 0 && !ctx.out.json) {
          ctx.out.note(
            filtered
              ? 'No published template matches these filters; `ark templates list` shows them all.'
              : 'No published templates yet. The operator fills the catalog with `ark-cp templates import --file deploy/templates/examples.json`; a template is published once a machine qualifies for it (`ark-cp templates qualify` records one by hand). Renting with your own image needs no template: `ark jobs create OFFER --image REF@sha256:…`.',
          );
          return;
        }
        ctx.out.result({ items }, () =>
          ctx.out.table(
            ['TEMPLATE', 'NAME', 'KIND', 'TIER', 'MIN VRAM GiB', 'BACKENDS'],
            items.map((t) => [
              t.template_id,
              t.name,
              t.kind,
              t.tier,
              formatGib(t.vram_fit.min_vram_bytes),
              t.runtimes.map((r) => r.backend).join(','),
            ]),
          ),
        );
      }),
    );
}

export function positiveInteger(text: string, what: string): number {
  if (!/^[1-9][0-9]*$/.test(text)) throw usageError(`${what} must be a positive integer (got "${text}")`);
  return Number(text);
}
