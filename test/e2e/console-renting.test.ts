// Renting from the web console in Chromium (issue 25 item 1, "Done when"), on SQLite and on PostgreSQL: the real
// control plane (`ark-cp serve`), a paired `ark-agent run` whose jobs run on a private dockerd, and Debian's Chromium
// driven by playwright-core. A new renter signs in, saves an SSH key, finds the offer on the marketplace page, rents it
// with the saved key (an image by digest whose container prints a line a second), sees the job RUNNING with its SSH
// command and host-key fingerprint, reads the container's lines as they come, extends the job, stops it and sees its
// unspent budget back; its host sees the rental on the machine page. Every page is also shot at a phone's width and
// must not scroll sideways there. Screenshots: test/artifacts/console-renting/ (git-ignored). What the browser did is
// checked over the public API.
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDockerAvailable } from '../harness/dockerd.js';
import { buildTestImage, type TestImage } from '../harness/images.js';
import { ConsoleBrowser, launchChromium } from './console-helpers.js';
import { api, repoRoot } from './host-side-helpers.js';
import { PASSWORD } from './payout-helpers.js';
import { DIALECTS, type DockerWorld, MACHINE_RATE_MICRO_PER_HOUR, RentalSite, startDockerWorld } from './rental-helpers.js';

const OUTPUT = join(repoRoot, 'test', 'artifacts', 'console-renting');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
/** The job's main process: a numbered line a second on stdout, until SIGTERM. */
const TALKER = "trap 'exit 0' TERM; i=0; while :; do i=$((i+1)); echo console-log-line-$i; sleep 1; done";
const CREDIT_MICRO = 50_000_000n;

const lineNumbers = async (page: Page): Promise<number[]> =>
  (await page.locator('#job-logs .log-line').allTextContents())
    .map((text) => /console-log-line-(\d+)/.exec(text)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number);

describe.skipIf(!isDockerAvailable())('renting from the web console in Chromium', () => {
  let world: DockerWorld;
  let talker: TestImage;
  let browser: Browser;

  beforeAll(async () => {
    [world, browser] = await Promise.all([startDockerWorld(), launchChromium()]);
    talker = await buildTestImage(world.daemon, {
      repository: 'ark-test/talker',
      registry: world.image.registry,
      changes: [`CMD ${JSON.stringify(['sh', '-c', TALKER])}`, 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'WORKDIR /workspace'],
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await world?.stop();
  }, 60_000);

  describe.each(DIALECTS)('on %s', (dialect) => {
    let site: RentalSite;
    let web: ConsoleBrowser;
    const renterEmail = `console-renter-${Math.random().toString(36).slice(2, 10)}@example.test`;
    let renterToken = '';

    /** The current page at a phone's width too: shot, and no sideways scrolling; then back to the desktop. */
    const shootBoth = async (page: Page, name: string) => {
      await web.screenshot(page, `${name}-desktop`);
      await page.setViewportSize(PHONE);
      await web.expectNoHorizontalOverflow(page, `${name} at ${PHONE.width} px`);
      await web.screenshot(page, `${name}-phone`);
      await page.setViewportSize(DESKTOP);
    };
    const asRenter = (method: string, path: string, body?: unknown) =>
      api(site.cp.base, method, path, { token: renterToken, ...(body === undefined ? {} : { body }), idempotent: method === 'POST' });

    beforeAll(async () => {
      site = await RentalSite.start(dialect, world);
      web = new ConsoleBrowser(browser, site.cp, dialect, OUTPUT);
      // A new renter with a password (the console signs in with it) and some credit.
      await site.cli(['accounts', 'create', '--email', renterEmail, '--role', 'renter', '--password', PASSWORD, '--verified']);
      await site.cli(['ledger', 'credit', '--email', renterEmail, '--amount-micro', CREDIT_MICRO.toString(), '--reason', 'e2e']);
      const session = await api(site.cp.base, 'POST', '/api/v1/auth/sessions', { body: { email: renterEmail, password: PASSWORD } });
      expect([200, 201]).toContain(session.status);
      renterToken = session.body.session_token;
    }, 180_000);

    afterAll(async () => {
      await web?.close();
      await site?.stop();
    }, 60_000);

    it('a new renter rents from the marketplace, follows the job live, extends and stops it; the host sees the rental', {
      timeout: 240_000,
    }, async () => {
      const renter = await web.actor({ viewport: DESKTOP });
      expect((await web.signIn(renter, renterEmail, PASSWORD)).status()).toBe(303);

      // Saved SSH keys: one added through the form; a line that is no key is refused in words.
      await web.visit(renter, '/console/keys', 'keys-empty');
      await renter.locator('#key-add textarea[name="public_key"]').fill('ssh-ed25519 not-a-key');
      expect(await web.submit(renter, '#key-add', { shot: 'keys-refused' })).toMatchObject({
        kind: 'error',
        text: expect.stringContaining('must be one OpenSSH public key line'),
      });
      await renter.locator('#key-add input[name="label"]').fill('e2e laptop');
      await renter.locator('#key-add textarea[name="public_key"]').fill(site.ssh.publicKey);
      const saved = await web.submit(renter, '#key-add', { shot: 'keys-saved' });
      expect(saved.kind, saved.text).toBe('ok');
      const keys = await asRenter('GET', '/api/v1/account/ssh-keys');
      expect(keys.body.items).toHaveLength(1);
      expect(keys.body.items[0]).toMatchObject({ label: 'e2e laptop', public_key: site.ssh.publicKey });
      await expect.poll(() => renter.locator(`#keys tr[data-key-id="${keys.body.items[0].id}"]`).count()).toBe(1);
      await shootBoth(renter, 'keys');

      // The marketplace: the machine is listed; a filter it fails hides it; a filter typed wrong is said in words.
      await web.visit(renter, '/console/offers?max_rate_usd=100&sort=price-desc', 'marketplace');
      const row = renter.locator(`#offers tr[data-machine-id="${site.machineId}"]`);
      await expect.poll(() => row.count()).toBe(1);
      expect(await row.locator('td[data-label="GPUs"]').textContent()).toBe('CPU only');
      expect(await row.locator('td[data-label="Price"]').textContent()).toMatch(/^\$\d+\.\d{2}\/h$/);
      await shootBoth(renter, 'marketplace');
      await web.visit(renter, '/console/offers?min_gpu_count=1', 'marketplace-gpus');
      expect(await row.count()).toBe(0);
      await web.visit(renter, '/console/offers?min_reliability_pct=200', 'marketplace-bad-filter');
      expect(await renter.locator('#market-problem').textContent()).toContain('Reliability is a percentage');
      // The filter form, as a person uses it.
      await web.visit(renter, '/console/offers', 'marketplace-all');
      await renter.locator('#market-filter input[name="max_rate_usd"]').fill('1000');
      await Promise.all([renter.waitForURL(/max_rate_usd=1000/), renter.locator('#market-filter [type="submit"]').click()]);
      await expect.poll(() => row.count()).toBe(1);
      await Promise.all([renter.waitForURL(/\/console\/offers\/[0-9a-f-]{36}$/), row.locator('a.button').click()]);
      expect(renter.url()).toContain(`/console/offers/${site.offerId}`);

      // The offer: a live quote as the form is filled, then rent with the saved key (checked as the only one).
      const rent = renter.locator('#rent');
      await rent.locator('input[name="image_digest"]').fill(talker.digestRef);
      await rent.locator('input[name="duration_min"]').fill('10');
      await rent.locator('input[name="budget_usd"]').fill('5');
      await rent.locator('input[name="budget_usd"]').dispatchEvent('change');
      await expect.poll(() => renter.locator('#quote-budget').textContent(), { timeout: 15_000 }).toBe('$5.00');
      expect(await rent.locator('input[name="ssh_key_id"]').isChecked()).toBe(true);
      await shootBoth(renter, 'offer-quoted');
      const [posted] = await Promise.all([
        renter.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/rent')),
        renter.locator('#rent-button').click(),
      ]);
      expect(posted.status()).toBe(303);
      await renter.waitForURL(/\/console\/jobs\/[0-9a-f-]{36}$/);
      const jobId = renter.url().split('/').pop() as string;
      expect(await renter.locator('.flash.ok').textContent()).toContain('Rented');
      await web.screenshot(renter, 'job-reserved');

      // The page follows the job to RUNNING by itself and shows how to connect, as the API says.
      await expect.poll(() => renter.locator('#job-state').textContent(), { timeout: 90_000, interval: 500 }).toBe('RUNNING');
      await expect.poll(() => renter.locator('#ssh-command').count(), { timeout: 15_000 }).toBe(1);
      const access = await asRenter('GET', `/api/v1/jobs/${jobId}/access`);
      expect(access.status).toBe(200);
      expect((await renter.locator('#ssh-command').textContent())?.trim()).toBe(access.body.ssh_command);
      expect(access.body.ssh_command).toMatch(/^ssh /);
      expect((await renter.locator('#host-key').textContent())?.trim()).toBe(access.body.ssh_host_key_fingerprint);
      const job = await asRenter('GET', `/api/v1/jobs/${jobId}`);
      expect(job.body).toMatchObject({ state: 'RUNNING', funded_budget_micro: '5000000' });

      // Live logs: the container's lines come in without a reload, newer ones after older ones.
      await expect.poll(async () => (await lineNumbers(renter)).length, { timeout: 30_000 }).toBeGreaterThan(0);
      const firstSeen = Math.max(...(await lineNumbers(renter)));
      await expect.poll(async () => Math.max(...(await lineNumbers(renter))), { timeout: 20_000 }).toBeGreaterThan(firstSeen + 1);
      const numbers = await lineNumbers(renter);
      expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
      await shootBoth(renter, 'job-running');

      // Extend: one more dollar and a longer limit, checked over the API.
      await renter.locator('#extend input[name="add_usd"]').fill('1');
      await renter.locator('#extend input[name="duration_min"]').fill('20');
      const extended = await web.submit(renter, '#extend', { shot: 'job-extended' });
      expect(extended, extended.text).toMatchObject({ kind: 'ok', text: expect.stringContaining('$6.00') });
      expect((await asRenter('GET', `/api/v1/jobs/${jobId}`)).body).toMatchObject({
        funded_budget_micro: '6000000',
        duration_limit_s: 1200,
      });

      // The host sees the rental on its machine page: the job, since when, what it earns an hour.
      const host = await web.actor({ viewport: DESKTOP });
      expect((await web.signIn(host, site.hostEmail, PASSWORD)).status()).toBe(303);
      await web.visit(host, `/console/machines/${site.machineId}`, 'host-machine');
      const rental = host.locator(`#rentals-table tr[data-job-id="${jobId}"]`);
      expect(await rental.count()).toBe(1);
      expect(await rental.locator('.state').textContent()).toBe('RUNNING');
      expect(await rental.locator('.earning-rate').textContent()).toBe(`$${(MACHINE_RATE_MICRO_PER_HOUR / 1_000_000n).toString()}.00/h`);
      // A machine without GPUs is charted by its CPU, load and memory instead.
      expect(await host.locator('#no-gpus').count()).toBe(1);
      expect(await host.locator('.chart[data-gpu="-1"]').count()).toBe(3);
      expect(await host.locator('#utilisation figcaption').textContent()).toContain('CPU utilisation');
      await shootBoth(host, 'host-machine');

      // Stop: once the machine confirms it, the page shows the unspent budget back in the balance.
      const stopped = await web.submit(renter, '#stop', { shot: 'job-stopping' });
      expect(stopped.kind, stopped.text).toBe('ok');
      await expect.poll(() => renter.locator('#unspent').count(), { timeout: 60_000, interval: 500 }).toBe(1);
      const after = (await asRenter('GET', `/api/v1/jobs/${jobId}`)).body;
      expect(['STOPPED', 'CLEANING', 'CLOSED']).toContain(after.state);
      const charged = BigInt(after.cumulative_charge_micro);
      expect(charged).toBeGreaterThan(0n);
      const unspent = 6_000_000n - charged;
      const balance = (await asRenter('GET', '/api/v1/billing/balance')).body;
      expect(balance).toMatchObject({ available_micro: (CREDIT_MICRO - charged).toString(), held_micro: '0' });
      const shownUnspent = (await renter.locator('#unspent').textContent()) ?? '';
      // The one money rule: two decimals from $1 up.
      expect(shownUnspent).toBe(`$${(Number((unspent + 5_000n) / 10_000n) / 100).toFixed(2)}`);
      expect(await renter.locator('#balance-available').textContent()).toBe(
        `$${(Number((CREDIT_MICRO - charged + 5_000n) / 10_000n) / 100).toFixed(2)}`,
      );
      await shootBoth(renter, 'job-stopped');

      // The host's daily earnings chart holds what the job earned it.
      await web.visit(host, '/console/earnings', 'host-earnings');
      const bars = await host
        .locator('#earnings-chart rect')
        .evaluateAll((rects) => rects.map((r) => BigInt(r.getAttribute('data-micro') ?? '0')));
      expect(bars).toHaveLength(30);
      expect(bars.reduce((a, b) => a + b, 0n)).toBe(await site.hostEarned());
      expect(await site.hostEarned()).toBeGreaterThan(0n);
      await shootBoth(host, 'host-earnings');

      // Nothing the pages did failed or broke their policy.
      expect(web.pageProblems).toEqual([]);
      for (const answer of await web.consoleAnswers()) expect(answer.contentSecurityPolicy, answer.url).toContain("script-src 'self'");
      expect(web.requests.filter((url) => !url.startsWith(site.cp.base))).toEqual([]);
    });
  });
});
