// The console's renting pages over the in-process app (issue 25 item 1): the marketplace's filters and sorts go to the
// API's offer search and a filter typed wrong is said in words; the rent form quotes live and reserves with a saved key;
// a refusal (no money) is shown in words with the form kept, and posts without a CSRF token are refused. The whole
// path on a real agent, in Chromium, is test/e2e/console-renting.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { bearer, createTestApp, seedAccount, type TestApp } from '../testing/app.js';
import { ConsoleClient } from '../testing/console-client.js';
import { customImage, fund, liveMachine, type LiveMachine, sshPublicKey } from '../testing/renting.js';
import { DIALECTS } from '../testing/stores.js';

describe.each(DIALECTS)('renting from the console on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let machine: LiveMachine;
  let offerId = '';

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { authAttemptsPerMinute: 1000, newHostMachineCap: 1000 } });
    machine = await liveMachine(t.ctx, t.app);
    const viewer = await seedAccount(t.ctx);
    const offers = await t.app.inject({ method: 'GET', url: '/api/v1/offers?limit=100', headers: bearer(viewer.apiKey) });
    offerId = offers.json().items.find((o: { machine_id: string }) => o.machine_id === machine.machineId).offer_id;
  });
  afterAll(async () => {
    await t.destroy();
  });

  const rowOf = (html: string) => new RegExp(`<tr data-machine-id="${machine.machineId}"[^>]*>[\\s\\S]*?</tr>`).exec(html)?.[0];

  it('filters the marketplace through the API and says a wrong filter in words', async () => {
    const renter = await seedAccount(t.ctx);
    const browser = new ConsoleClient(t);
    await browser.signIn(renter);
    const all = await browser.get('/console/offers?sort=price-desc');
    expect(all.statusCode).toBe(200);
    const row = rowOf(all.body);
    expect(row).toContain(`href="/console/offers/${offerId}"`);
    expect(row).not.toContain('- × -');
    expect(row).toMatch(/<td data-label="Price">\$[\d,]+\.\d{2}\/h<\/td>/);
    expect(rowOf((await browser.get('/console/offers?gpu_model=No+Such+GPU')).body)).toBeUndefined();
    expect(rowOf((await browser.get('/console/offers?min_gpu_count=64')).body)).toBeUndefined();
    expect(rowOf((await browser.get('/console/offers?max_rate_usd=0.000001')).body)).toBeUndefined();
    expect(rowOf((await browser.get('/console/offers?min_vram_gib=1')).body)).toBeDefined();
    const bad = await browser.get('/console/offers?max_rate_usd=cheap');
    expect(bad.body).toContain('The highest price is an amount in USD per hour');
    const badScore = await browser.get('/console/offers?min_score=lots');
    expect(badScore.body).toMatch(/id="market-problem">[^<]*VALIDATION_FAILED/);
  });

  it('quotes live, refuses in words with the form kept, and rents with a saved key', async () => {
    const renter = await seedAccount(t.ctx);
    const browser = new ConsoleClient(t);
    await browser.signIn(renter);
    await browser.get('/console/keys');
    const key = sshPublicKey('console@test');
    await browser.post('/console/keys', { label: 'test', public_key: key });
    const keys = await t.app.inject({ method: 'GET', url: '/api/v1/account/ssh-keys', headers: bearer(renter.apiKey) });
    const keyId = keys.json().items[0].id;

    const page = await browser.get(`/console/offers/${offerId}`);
    expect(page.body).toContain(`name="ssh_key_id" value="${keyId}"`);
    const form = { source: 'image', image_digest: customImage(), gpu_count: '1', duration_min: '30', budget_usd: '2.5', ssh_key_id: keyId };
    // The live quote: a fragment for htmx; nothing chosen yet is no error.
    const quote = async (fields: Record<string, string>) =>
      t.app.inject({
        method: 'POST',
        url: `/console/offers/${offerId}/quote`,
        headers: { cookie: browser.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', 'hx-request': 'true' },
        payload: new URLSearchParams({ _csrf: browser.csrf, ...fields }).toString(),
      });
    const quiet = await quote({ ...form, image_digest: '' });
    expect(quiet.body).toContain('Choose what to run to see a quote.');
    const quoted = await quote(form);
    expect(quoted.body.startsWith('<div id="quote"')).toBe(true);
    expect(quoted.body).toContain('<strong id="quote-budget">$2.50</strong>');
    const wrongDuration = await quote({ ...form, duration_min: 'soon' });
    expect(wrongDuration.body).toContain('The duration is a whole number of minutes');

    // No money yet: the API's refusal, in words, on the page with what was typed.
    const poor = await browser.post(`/console/offers/${offerId}/rent`, form);
    expect(poor.statusCode).toBe(422);
    expect(poor.body).toMatch(/id="rent-problem"[^>]*>[^<]*\(INSUFFICIENT_BALANCE\)/);
    expect(poor.body).toContain(`value="${form.image_digest}"`);
    const noKey = await browser.post(`/console/offers/${offerId}/rent`, { ...form, ssh_key_id: '' });
    expect(noKey.body).toContain('Choose one of your saved SSH keys or paste a public key');
    // Without its CSRF token a rent is refused.
    expect((await browser.post(`/console/offers/${offerId}/rent`, form, { csrf: false })).statusCode).toBe(403);

    await fund(t.ctx, renter.accountId, 10_000_000n);
    const rented = await browser.post(`/console/offers/${offerId}/rent`, form);
    expect(rented.statusCode).toBe(303);
    const jobId = /\/console\/jobs\/([0-9a-f-]{36})$/.exec(String(rented.headers.location))?.[1] as string;
    const job = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}`, headers: bearer(renter.apiKey) });
    expect(job.json()).toMatchObject({ state: 'RESERVED', funded_budget_micro: '2500000', duration_limit_s: 1800 });
    const landed = await browser.get(`/console/jobs/${jobId}`);
    expect(landed.body).toMatch(/class="flash ok"[^>]*>Rented: job/);
    expect(landed.body).toContain('id="job-starting"');
    // Extend from the form: the versions the page showed.
    const extended = await browser.post(`/console/jobs/${jobId}/extend`, {
      add_usd: '1',
      duration_min: '45',
      job_version: job.json().job_version,
      budget_version: job.json().budget_version,
    });
    expect(extended.statusCode).toBe(303);
    expect((await browser.get(`/console/jobs/${jobId}`)).body).toMatch(/class="flash ok"[^>]*>Extended: the job is funded with \$3\.50/);
  });
});
