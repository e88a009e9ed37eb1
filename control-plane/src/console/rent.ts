import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, apiErrorText, type ConsoleApi } from './api.js';
import { usd, usdToMicro } from './format.js';
import { type ConsoleScope, FormError, action, flash, page, render, type Signed, signedIn } from './session.js';

// The renter's path in the console (issue 25 item 1): the marketplace (the public API's offer search, its filters and
// validation), an offer with a live quote (POST /api/v1/quotes, as the API quotes) and the rent form that quotes and
// reserves (POST /api/v1/jobs) with saved or pasted SSH keys. Every call is the public API's, in process.

/** The marketplace's sort orders, over the matching offers (the API answers them cheapest first). */
export const SORTS: Record<string, { label: string; key: (o: any) => number; descending: boolean }> = {
  price: { label: 'Price, lowest first', key: (o) => Number(o.total_rate_micro_per_hour), descending: false },
  'price-desc': { label: 'Price, highest first', key: (o) => Number(o.total_rate_micro_per_hour), descending: true },
  gpus: { label: 'Most GPUs', key: (o) => o.gpu_count ?? 0, descending: true },
  vram: { label: 'Most VRAM', key: (o) => Number(o.vram_bytes ?? 0), descending: true },
  reliability: { label: 'Most reliable', key: (o) => Number(o.reliability?.score ?? -1), descending: true },
  score: { label: 'Highest verified score', key: (o) => Number(o.verification?.score ?? -1), descending: true },
};

/** How many matching offers the page shows (the API's largest page). */
const MARKET_PAGE = 100;
const GIB = 2n ** 30n;

interface MarketFilter {
  gpu_model: string;
  min_gpu_count: string;
  min_vram_gib: string;
  max_rate_usd: string;
  min_reliability_pct: string;
  min_score: string;
  sort: string;
}

/** The API query of the marketplace's filter form; a value the person got wrong is a FormError in their words. */
export function offerQuery(f: MarketFilter): string {
  const q = new URLSearchParams({ limit: String(MARKET_PAGE), include: 'reliability,verification' });
  if (f.gpu_model) q.set('gpu_model', f.gpu_model);
  if (f.min_gpu_count) {
    if (!/^[0-9]{1,4}$/.test(f.min_gpu_count)) throw new FormError('The number of GPUs is a whole number, e.g. 2.');
    q.set('min_gpu_count', String(Number(f.min_gpu_count)));
  }
  if (f.min_vram_gib) {
    if (!/^[0-9]{1,6}$/.test(f.min_vram_gib)) throw new FormError('VRAM is a whole number of GiB per GPU, e.g. 24.');
    q.set('min_vram_bytes', (BigInt(f.min_vram_gib) * GIB).toString());
  }
  if (f.max_rate_usd) {
    const micro = usdToMicro(f.max_rate_usd);
    if (micro === null) throw new FormError('The highest price is an amount in USD per hour, e.g. 2.50.');
    q.set('max_rate_micro_per_hour', micro.toString());
  }
  if (f.min_reliability_pct) {
    const pct = Number(f.min_reliability_pct);
    if (!/^[0-9]{1,3}(\.[0-9]{1,2})?$/.test(f.min_reliability_pct) || pct > 100)
      throw new FormError('Reliability is a percentage from 0 to 100, e.g. 99.5.');
    q.set('min_reliability', (Math.round(pct * 100) / 10_000).toFixed(4));
  }
  if (f.min_score) q.set('min_score', f.min_score);
  return q.toString();
}

function filterOf(query: Record<string, string>): MarketFilter {
  const text = (name: string) => (typeof query[name] === 'string' ? query[name].trim().slice(0, 200) : '');
  const sort = text('sort');
  return {
    gpu_model: text('gpu_model'),
    min_gpu_count: text('min_gpu_count'),
    min_vram_gib: text('min_vram_gib'),
    max_rate_usd: text('max_rate_usd'),
    min_reliability_pct: text('min_reliability_pct'),
    min_score: text('min_score'),
    sort: sort in SORTS ? sort : 'price',
  };
}

/** One listed offer by id, through the API's search (every page, bounded): null when it is not listed now. */
async function findOffer(api: ConsoleApi, offerId: string): Promise<any | null> {
  let found: any = null;
  await api.walk('/api/v1/offers?limit=100&include=reliability,verification', (items: any[]) => {
    found = items.find((o) => o.offer_id === offerId) ?? null;
    return found === null;
  });
  return found;
}

/** The rent form as typed, kept to show it again. */
export interface RentForm {
  gpu_count: string;
  duration_min: string;
  budget_usd: string;
  source: 'template' | 'image';
  template_id: string;
  image_digest: string;
  ssh_key_ids: string[];
  ssh_public_key: string;
}

function rentFormOf(body: Record<string, unknown> | undefined, offer: any): RentForm {
  const text = (name: string) => (typeof body?.[name] === 'string' ? (body[name] as string).trim() : '');
  const ids = body?.ssh_key_id;
  return {
    gpu_count: text('gpu_count') || String(Math.max(1, offer?.gpu_count ?? 1)),
    duration_min: text('duration_min') || '60',
    budget_usd: text('budget_usd'),
    source: text('source') === 'template' ? 'template' : 'image',
    template_id: text('template_id'),
    image_digest: text('image_digest'),
    ssh_key_ids: (Array.isArray(ids) ? ids : typeof ids === 'string' ? [ids] : []).filter((id): id is string => typeof id === 'string'),
    ssh_public_key: text('ssh_public_key'),
  };
}

/** The quote request of a rent form (POST /api/v1/quotes body). */
export function quoteBody(offer: any, form: RentForm): Record<string, unknown> {
  const gpuCount = Number(form.gpu_count);
  if (!/^[0-9]{1,4}$/.test(form.gpu_count) || gpuCount < 1) throw new FormError('The number of GPUs is a whole number, at least 1.');
  const minutes = Number(form.duration_min);
  if (!/^[0-9]{1,7}$/.test(form.duration_min) || minutes < 1) throw new FormError('The duration is a whole number of minutes, at least 1.');
  const body: Record<string, unknown> = { offer_id: offer.offer_id, gpu_count: gpuCount, duration_limit_s: minutes * 60 };
  if (form.budget_usd !== '') {
    const micro = usdToMicro(form.budget_usd);
    if (micro === null || micro < 1n)
      throw new FormError('The budget is an amount in USD, e.g. 5 or 12.50; leave it empty to fund the whole duration.');
    body.budget_micro = micro.toString();
  }
  if (form.source === 'template') {
    if (form.template_id === '') throw new FormError('Choose a template, or run an image by its digest.');
    body.template_id = form.template_id;
  } else {
    if (form.image_digest === '')
      throw new FormError('Give the image by digest (registry/name@sha256:...; `ark images resolve REF` finds it), or choose a template.');
    body.image_digest = form.image_digest;
  }
  return body;
}

async function savedKeys(api: ConsoleApi): Promise<any[]> {
  const keys = await api.call('GET', '/api/v1/account/ssh-keys?limit=100');
  return keys.status === 200 ? keys.body.items : [];
}

async function offerPage(
  request: FastifyRequest,
  reply: FastifyReply,
  who: Signed,
  offer: any,
  extra: { form?: RentForm; quote?: unknown; problem?: string | null; quoteProblem?: string | null; status?: number },
) {
  const templates = await who.api.call('GET', '/api/v1/templates?limit=100');
  return render(
    request,
    reply,
    'offer',
    {
      title: `Offer ${offer.offer_id.slice(0, 8)}`,
      account: who.account,
      offer,
      templates: templates.status === 200 ? templates.body.items : [],
      keys: await savedKeys(who.api),
      form: extra.form ?? rentFormOf(undefined, offer),
      quote: extra.quote ?? null,
      problem: extra.problem ?? null,
      quoteProblem: extra.quoteProblem ?? null,
    },
    extra.status ?? 200,
  );
}

/** A failure a person can act on, in words: the API's refusal (with its code) or the form's own check. */
function problemOf(error: unknown): string {
  if (error instanceof ApiError) return apiErrorText(error.answer);
  if (error instanceof FormError) return error.message;
  throw error;
}

export function registerRentPages(c: ConsoleScope): void {
  page(c, '/offers', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const filter = filterOf(request.query);
    let refused: string | null = null;
    let offers: any[] = [];
    let more = false;
    try {
      const got = await who.api.get(`/api/v1/offers?${offerQuery(filter)}`);
      offers = got.items;
      more = got.next_cursor !== null;
    } catch (error) {
      refused = problemOf(error);
    }
    const sort = SORTS[filter.sort] ?? (SORTS.price as (typeof SORTS)[string]);
    const sorted = offers
      .map((o, i) => ({ o, i }))
      .sort((a, b) => (sort.descending ? sort.key(b.o) - sort.key(a.o) : sort.key(a.o) - sort.key(b.o)) || a.i - b.i)
      .map(({ o }) => o);
    return render(request, reply, 'offers', {
      title: 'Marketplace',
      account: who.account,
      offers: sorted,
      filter,
      sorts: Object.entries(SORTS).map(([value, s]) => ({ value, label: s.label })),
      models: [...new Set(offers.map((o) => o.model).filter(Boolean))].sort(),
      more,
      refused,
    });
  });

  page<{ id: string }>(c, '/offers/:id', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const offer = await findOffer(who.api, request.params.id);
    if (!offer) return notListed(c, reply);
    return offerPage(request, reply, who, offer, {});
  });

  // The live quote: the rent form as it stands, quoted by the API. htmx asks for the fragment on every change; without
  // script the form's "Quote" button posts here and gets the whole page.
  action<{ id: string }>(c, '/offers/:id/quote', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const offer = await findOffer(who.api, request.params.id);
    const fragment = request.headers['hx-request'] === 'true';
    if (!offer)
      return fragment
        ? render(request, reply, 'quote', {
            title: 'Quote',
            account: who.account,
            quote: null,
            quoteProblem: 'This offer is not listed any more.',
          })
        : notListed(c, reply);
    const form = rentFormOf(request.body, offer);
    let quote: unknown = null;
    let problem: string | null = null;
    // Nothing chosen to run yet: no quote to ask for, and nothing wrong either.
    const chosen = form.source === 'template' ? form.template_id !== '' : form.image_digest !== '';
    if (chosen) {
      try {
        quote = await who.api.post('/api/v1/quotes', quoteBody(offer, form));
      } catch (error) {
        problem = problemOf(error);
      }
    }
    if (fragment) return render(request, reply, 'quote', { title: 'Quote', account: who.account, quote, quoteProblem: problem });
    return offerPage(request, reply, who, offer, { form, quote, quoteProblem: problem });
  });

  // Rent: quote the form and reserve the quoted machine with the chosen keys; the job page follows it from there.
  action<{ id: string }>(c, '/offers/:id/rent', async (request, reply) => {
    const who = await signedIn(c, request, reply);
    if (!who) return reply;
    const offer = await findOffer(who.api, request.params.id);
    if (!offer) return notListed(c, reply);
    const form = rentFormOf(request.body, offer);
    try {
      const saved = await savedKeys(who.api);
      const keys = saved.filter((k) => form.ssh_key_ids.includes(k.id)).map((k) => k.public_key as string);
      if (form.ssh_public_key !== '')
        keys.push(
          ...form.ssh_public_key
            .split(/\r?\n/)
            .map((line) => line.trim())
            .filter(Boolean),
        );
      if (keys.length === 0)
        throw new FormError('Choose one of your saved SSH keys or paste a public key: the job’s SSH server lets in only those.');
      const quote = await who.api.post('/api/v1/quotes', quoteBody(offer, form));
      const job = await who.api.post('/api/v1/jobs', { quote_id: quote.quote_id, ssh_public_keys: keys });
      flash(
        c,
        reply,
        'ok',
        `Rented: job ${job.job_id.slice(0, 8)} is ${job.state}. ${usd(quote.budget_micro)} is held from your balance; what it does not spend comes back when it stops.`,
      );
      return reply.redirect(`/console/jobs/${encodeURIComponent(job.job_id)}`, 303);
    } catch (error) {
      return offerPage(request, reply, who, offer, { form, problem: problemOf(error), status: 422 });
    }
  });
}

function notListed(c: ConsoleScope, reply: FastifyReply) {
  flash(c, reply, 'error', 'This offer is not listed any more (rented, withdrawn or its machine is away): pick another one.');
  return reply.redirect('/console/offers', 303);
}
