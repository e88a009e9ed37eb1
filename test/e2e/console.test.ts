// The web console in Chromium (issue 13, "Done when"), on SQLite and on PostgreSQL: the real control plane
// (`ark-cp serve`) with a real anvil playing Base and a payout wallet, a real `ark-agent` paired and reporting
// telemetry from a recorded nvidia-smi document, and Debian's Chromium driven by playwright-core. A host signs in,
// sees its live machine's telemetry drawn from the real gateway, changes its offer and adds a maintenance window; an
// operator with TOTP pauses and resumes admissions and approves a held withdrawal. Pages read without JavaScript and
// fit a phone; every console page carries a strict content security policy, nothing is loaded from elsewhere, and a
// form posted without its CSRF token is refused. What the browser did is checked over the public API.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import type { SpawnedProcess } from '../harness/processes.js';
import { type Authenticator, adminWithTotp, ConsoleBrowser, launchChromium, rfc3339 } from './console-helpers.js';
import { type DepositChain, setupDepositChain } from './deposit-helpers.js';
import {
  type AgentSetup,
  agentSetup,
  api,
  type ControlPlane,
  controlPlaneCli,
  hostSession,
  nvidiaSmiFixture,
  pairAgent,
  startAgent,
  startControlPlane,
  waitWhileRunning,
} from './host-side-helpers.js';
import {
  addWithdrawalAddress,
  call,
  fundedPayoutWallet,
  PASSWORD,
  randomAddress,
  randomTag,
  steppedUpSession,
  USDC,
  waitWithdrawal,
} from './payout-helpers.js';

const METRICS = ['utilization', 'temperature', 'power', 'memory'];
/** The recorded nvidia-smi document's two L4 cards. */
const FIXTURE_GPUS = 2;
const HOST_LINKS = ['/console/machines', '/console/pair', '/console/earnings', '/console/market'];
const ADMIN_LINKS = ['/console/admin', '/console/admin/withdrawals', '/console/admin/subsystems', '/console/admin/tickets'];

let browser: Browser;
let anvil: Anvil;
let chain: DepositChain;

beforeAll(async () => {
  [browser, anvil] = await Promise.all([launchChromium(), startAnvil()]);
  chain = await setupDepositChain(anvil);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await anvil?.stop();
});

const sumSamples = (buckets: Array<{ samples: number }>) => buckets.reduce((total, bucket) => total + bucket.samples, 0);
const navLinks = (page: Page) => page.locator('nav a').evaluateAll((links) => links.map((link) => link.getAttribute('href') ?? ''));

describe.each(['sqlite', 'postgres'] as const)('the web console in Chromium on %s', (store) => {
  let database: TestDatabase | null = null;
  let cp: ControlPlane;
  let web: ConsoleBrowser;
  let agentConfig: AgentSetup | undefined;
  let agent: SpawnedProcess | undefined;
  const tag = randomTag();
  const hostEmail = `host-${tag}@example.test`;
  const adminEmail = `admin-${tag}@example.test`;
  let hostToken = '';
  let machineId = '';
  let renterToken = '';
  let heldWithdrawalId = '';
  let adminToken = '';
  let authenticator: Authenticator;

  const machine = async () => {
    const answer = await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token: hostToken });
    expect(answer.status).toBe(200);
    return answer.body;
  };

  /** A host with a real agent paired, live, and telemetry buckets over the API. */
  const hostWithLiveMachine = async () => {
    hostToken = await hostSession(cp, hostEmail);
    agentConfig = agentSetup(
      {
        heartbeat_interval_s: 2,
        telemetry_sample_interval_s: 1,
        telemetry_batch_interval_s: 2,
        require_docker: false,
        min_disk_free_bytes: 0,
      },
      { ARK_AGENT_NVIDIA_SMI_FIXTURE: nvidiaSmiFixture },
    );
    machineId = (await pairAgent(cp, hostToken, agentConfig)).machineId;
    const daemon = startAgent(agentConfig, ['run']);
    agent = daemon;
    await waitWhileRunning(
      daemon,
      async () => (await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token: hostToken })).body?.live === 'live',
      { timeoutMs: 60_000, intervalMs: 250, description: 'the machine to go live' },
    );
    await waitWhileRunning(
      daemon,
      async () => {
        const answer = await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}/telemetry?window=1h`, { token: hostToken });
        return answer.status === 200 && sumSamples(answer.body.buckets) >= 3;
      },
      { timeoutMs: 45_000, intervalMs: 500, description: 'telemetry buckets over the API' },
    );
  };

  /** A renter with a balance whose withdrawal over the review threshold waits, unsigned, for an admin. */
  const renterWithHeldWithdrawal = async () => {
    const renterEmail = `renter-${tag}@example.test`;
    renterToken = await steppedUpSession(cp, 'renter', renterEmail);
    await controlPlaneCli(cp, ['ledger', 'credit', '--email', renterEmail, '--amount-micro', String(100n * USDC), '--reason', 'e2e funds']);
    const addressId = await addWithdrawalAddress(cp, renterToken, randomAddress());
    const requested = await call(cp, 'POST', '/api/v1/withdrawals', {
      token: renterToken,
      body: { amount_micro: String(30n * USDC), withdrawal_address_id: addressId },
    });
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    heldWithdrawalId = requested.body.id;
    const held = await waitWithdrawal(cp, anvil, renterToken, heldWithdrawalId, 'UNSIGNED');
    expect(held.hold_reasons).toEqual(['amount_over_review_threshold']);
  };

  beforeAll(async () => {
    if (store === 'postgres') database = await createTestDatabase();
    const wallet = await fundedPayoutWallet(chain, anvil, 1_000n * USDC);
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: {
        // As payouts.test.ts: the payer pays from a funded wallet on anvil; over 20 USDC waits for review.
        ARK_CHAINS: chain.chainsFile,
        ARK_SECRET_KEY: randomBytes(32).toString('hex'),
        ARK_CHAIN_POLL_INTERVAL_MS: '200',
        ARK_PAYOUT_KEY_FILE: wallet.keyFile,
        ARK_PAYOUT_POLL_INTERVAL_MS: '200',
        ARK_WITHDRAWAL_REVIEW_ABOVE_MICRO: String(20n * USDC),
        ARK_WITHDRAWAL_NEW_ADDRESS_HOLD_S: '0',
        ARK_WITHDRAWAL_REVIEW_FIRST: '0',
      },
    });
    web = new ConsoleBrowser(browser, cp, store);
    await Promise.all([
      hostWithLiveMachine(),
      renterWithHeldWithdrawal(),
      (async () => {
        ({ token: adminToken, authenticator } = await adminWithTotp(cp, adminEmail));
      })(),
    ]);
  }, 240_000);

  afterAll(async () => {
    await web?.close();
    await agent?.stop('SIGTERM');
    await cp?.process.stop('SIGKILL');
    await database?.drop();
    if (agentConfig !== undefined) rmSync(dirname(agentConfig.stateDir), { recursive: true, force: true });
    if (cp !== undefined) rmSync(cp.dataDir, { recursive: true, force: true });
  });

  it('a host signs in, sees its live machine telemetry drawn, changes its offer and adds a maintenance window', async () => {
    const page = await web.actor();

    // A wrong password stays on the sign-in page with an error.
    await web.signIn(page, hostEmail, 'not the password');
    await expect.poll(() => page.locator('.flash.error').count()).toBeGreaterThanOrEqual(1);
    await expect.poll(() => page.locator('form#login').count()).toBe(1);
    await web.screenshot(page, 'login-refused');
    expect((await page.context().cookies()).some((cookie) => cookie.name === 'ark_console')).toBe(false);

    const posted = await web.signIn(page, hostEmail, PASSWORD);
    expect(posted.status()).toBe(303);
    expect(new URL((await posted.headerValue('location')) ?? '', cp.base).pathname).toBe('/console');
    expect(new URL(page.url()).pathname).toBe('/console');
    await web.screenshot(page, 'home');
    const session = (await page.context().cookies()).find((cookie) => cookie.name === 'ark_console');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
    const links = await navLinks(page);
    expect(links).toEqual(expect.arrayContaining(HOST_LINKS));
    expect(links).not.toContain('/console/admin');
    expect(await page.locator('form#logout').count()).toBe(1);

    await web.visit(page, '/console/machines', 'machines');
    const row = page.locator(`table#machines tbody tr[data-machine-id="${machineId}"]`);
    expect(await row.count()).toBe(1);
    await Promise.all([page.waitForURL(`**/console/machines/${machineId}`), row.locator('td').first().locator('a').first().click()]);
    await expect.poll(() => page.locator('main h1').count()).toBeGreaterThanOrEqual(1);

    // Telemetry from the real agent through the gateway: one chart per GPU and metric, drawn by uPlot.
    const charts = page.locator('section#telemetry div.chart');
    const drawn = async () =>
      charts.evaluateAll((elements) =>
        elements.map((element) => ({
          gpu: element.getAttribute('data-gpu'),
          metric: element.getAttribute('data-metric'),
          points: Number(element.getAttribute('data-points') ?? 'NaN'),
          canvas: element.querySelector('canvas') !== null,
        })),
      );
    await expect
      .poll(async () => (await drawn()).some((chart) => chart.points >= 1 && chart.canvas), {
        timeout: 30_000,
        message: 'a telemetry chart drawn with data points',
      })
      .toBe(true);
    const all = await drawn();
    expect(all).toHaveLength(FIXTURE_GPUS * METRICS.length);
    expect(new Set(all.map((chart) => chart.metric))).toEqual(new Set(METRICS));
    expect(new Set(all.map((chart) => chart.gpu))).toEqual(new Set(['0', '1']));
    await web.screenshot(page, 'machine-telemetry');
    for (const window of ['1h', '6h', '48h']) expect(await page.locator(`a[href*="window=${window}"]`).count()).toBeGreaterThanOrEqual(1);
    await Promise.all([page.waitForURL(/window=6h/), page.locator('a[href*="window=6h"]').first().click()]);
    await expect.poll(async () => (await drawn()).some((chart) => chart.points >= 1 && chart.canvas), { timeout: 30_000 }).toBe(true);
    await web.screenshot(page, 'machine-telemetry-6h');

    // The offer: a new rate through form#offer, seen on the page and over the API.
    const before = (await machine()).offer;
    expect(before).not.toBeNull();
    await page.locator('form#offer input[name="rate_usd_per_hour"]').fill('2.5');
    const changed = await web.submit(page, 'form#offer', { shot: 'offer-changed' });
    expect(changed.kind, changed.text).toBe('ok');
    expect(new URL(page.url()).pathname).toBe(`/console/machines/${machineId}`);
    expect(await page.locator('#offer-rate').textContent()).toMatch(/\$2\.50*\/h/);
    const after = (await machine()).offer;
    expect(after.rate_micro_per_hour).toBe('2500000');
    expect(BigInt(after.offer_version)).toBeGreaterThan(BigInt(before.offer_version));

    // A maintenance window through form#maintenance-add, listed with its own remove form.
    const startsAt = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 24 * 3_600_000);
    const endsAt = new Date(startsAt.getTime() + 2 * 3_600_000);
    const maintenance = page.locator('form#maintenance-add');
    await maintenance.locator('input[name="starts_at"]').fill(rfc3339(startsAt));
    await maintenance.locator('input[name="ends_at"]').fill(rfc3339(endsAt));
    await maintenance.locator('[name="reason"]').fill('fan replacement');
    const added = await web.submit(page, 'form#maintenance-add', { shot: 'maintenance-added' });
    expect(added.kind, added.text).toBe('ok');
    const windows = page.locator('ul#maintenance li');
    expect(await windows.count()).toBe(1);
    expect(await windows.first().locator('form.maintenance-remove').count()).toBe(1);
    const listed = (await machine()).offer.maintenance_windows as Array<{ starts_at: string; ends_at: string }>;
    expect(listed).toHaveLength(1);
    expect(new Date(listed[0]?.starts_at ?? '').getTime()).toBe(startsAt.getTime());
    expect(new Date(listed[0]?.ends_at ?? '').getTime()).toBe(endsAt.getTime());
  });

  // Four TOTP codes in all (enrollment, pause, resume, approve): one may wait out a 30 s period on a slow machine.
  it('an operator with TOTP sees the fleet, pauses and resumes admissions, and approves a held withdrawal', {
    timeout: 120_000,
  }, async () => {
    const page = await web.actor();
    const posted = await web.signIn(page, adminEmail, PASSWORD);
    expect(posted.status()).toBe(303);
    expect(await navLinks(page)).toEqual(expect.arrayContaining(ADMIN_LINKS));

    await web.visit(page, '/console/admin', 'admin');
    const fleet = (await api(cp.base, 'GET', '/api/v1/admin/fleet', { token: adminToken })).body;
    const shown = async (name: string) => Number((await page.locator(`#fleet [data-fleet="${name}"]`).textContent())?.trim());
    expect({
      online: await shown('machines-online'),
      total: await shown('machines-total'),
      listed: await shown('gpus-listed'),
      allocated: await shown('gpus-allocated'),
    }).toEqual({ online: 1, total: 1, listed: FIXTURE_GPUS, allocated: 0 });
    expect(fleet).toMatchObject({ machines: { online: 1, total: 1 }, gpus: { listed: FIXTURE_GPUS, allocated: 0 } });

    const admissions = async () => (await api(cp.base, 'GET', '/api/v1/admin/admissions', { token: adminToken })).body;
    const switchAdmissions = async (to: 'paused' | 'open') => {
      const form = page.locator('form#admissions');
      expect(await form.locator('input[name="enabled"]').getAttribute('value')).toBe(to === 'paused' ? 'false' : 'true');
      await form.locator('[name="reason"]').fill(to === 'paused' ? 'console drill: payout rail check' : 'console drill over');
      await form.locator('[name="totp_code"]').fill(await authenticator.nextCode());
      const result = await web.submit(page, 'form#admissions', { shot: `admissions-${to}` });
      expect(result.kind, result.text).toBe('ok');
      expect((await page.locator('#admissions-state').textContent())?.trim()).toBe(to);
    };
    expect((await page.locator('#admissions-state').textContent())?.trim()).toBe('open');
    await switchAdmissions('paused');
    expect(await admissions()).toMatchObject({ enabled: false, reason: 'console drill: payout rail check' });
    await switchAdmissions('open');
    expect(await admissions()).toMatchObject({ enabled: true });

    await web.visit(page, '/console/admin/withdrawals', 'admin-withdrawals');
    const row = page.locator(`table#withdrawal-queue tr[data-withdrawal-id="${heldWithdrawalId}"]`);
    expect(await row.count()).toBe(1);
    const review = row.locator('form.review');
    await review.locator('[name="reason"]').fill('customer verified by phone');
    await review.locator('[name="totp_code"]').fill(await authenticator.nextCode());
    const approved = await web.submit(page, `tr[data-withdrawal-id="${heldWithdrawalId}"] form.review`, {
      button: 'button[name="decision"][value="approve"]',
      shot: 'withdrawal-approved',
    });
    expect(approved.kind, approved.text).toBe('ok');
    const state = (await call(cp, 'GET', `/api/v1/withdrawals/${heldWithdrawalId}`, { token: renterToken })).body.state;
    expect(['INTENT', 'SIGNED', 'BROADCAST', 'CONFIRMED']).toContain(state);
    const audit = await api(cp.base, 'GET', '/api/v1/admin/audit?limit=100', { token: adminToken });
    expect(audit.body.items).toContainEqual(
      expect.objectContaining({
        action: 'withdrawal.reviewed',
        subject: heldWithdrawalId,
        detail: expect.objectContaining({ reason: 'customer verified by phone' }),
      }),
    );
  });

  it('reads pages without JavaScript', async () => {
    const page = await web.actor({ javaScriptEnabled: false });
    const posted = await web.signIn(page, hostEmail, PASSWORD);
    expect(posted.status()).toBe(303);
    await web.visit(page, '/console/machines', 'machines-no-javascript');
    expect(await page.locator(`table#machines tbody tr[data-machine-id="${machineId}"]`).count()).toBe(1);
  });

  it('fits a phone: /console/machines without horizontal scroll at 390x844', async () => {
    const page = await web.actor({ viewport: { width: 390, height: 844 } });
    await web.signIn(page, hostEmail, PASSWORD);
    await web.visit(page, '/console/machines', 'machines-phone');
    expect(await page.locator('table#machines').count()).toBe(1);
    expect(await page.locator('html').evaluate((html) => html.scrollWidth)).toBeLessThanOrEqual(390);
  });

  it('refuses a form posted without its CSRF token', async () => {
    const page = await web.actor();
    await web.signIn(page, hostEmail, PASSWORD);
    await web.visit(page, `/console/machines/${machineId}`, 'machine-before-forged-post');
    const form = page.locator('form#offer');
    const action = new URL((await form.getAttribute('action')) ?? page.url(), page.url()).toString();
    const names = await form
      .locator('input[name], textarea[name]')
      .evaluateAll((inputs) => inputs.map((input) => input.getAttribute('name') ?? ''));
    const fields: Record<string, string> = {};
    for (const name of names) fields[name] = await form.locator(`[name="${name}"]`).first().inputValue();
    expect(fields._csrf).toEqual(expect.any(String));
    const rateBefore = (await machine()).offer.rate_micro_per_hour;
    const { _csrf: _, ...withoutToken } = fields;
    // The session cookie goes with it (the context's cookie jar): only the token is missing.
    const forged = await page.request.post(action, { form: { ...withoutToken, rate_usd_per_hour: '9' }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);
    expect((await machine()).offer.rate_micro_per_hour).toBe(rateBefore);
    const logout = await page.request.post(`${cp.base}/console/logout`, { form: {}, maxRedirects: 0 });
    expect(logout.status()).toBe(403);
    // Still signed in: the refused logout did nothing.
    await web.visit(page, '/console/machines', 'machines-after-forged-posts');

    // The real logout, form#logout in the header, ends the session, at the service too: the old cookie is worthless.
    const cookie = (await page.context().cookies()).find((c) => c.name === 'ark_console');
    expect(cookie?.value).toEqual(expect.any(String));
    const loggedOut = await web.submitAndLand(page, 'form#logout');
    expect(loggedOut.status()).toBe(303);
    await page.waitForURL('**/console/login**');
    await web.screenshot(page, 'logged-out');
    await page.goto('/console/machines');
    expect(new URL(page.url()).pathname).toBe('/console/login');
    const replayed = await fetch(`${cp.base}/console/machines`, {
      headers: { cookie: `ark_console=${cookie?.value}` },
      redirect: 'manual',
    });
    expect([302, 303, 307]).toContain(replayed.status);
    expect(new URL(replayed.headers.get('location') ?? '', cp.base).pathname).toBe('/console/login');
  });

  it('every console page carried a content security policy without unsafe-inline, and nothing left the control plane', async () => {
    const answers = await web.consoleAnswers();
    expect(answers.length).toBeGreaterThan(10);
    const weak = answers.filter(
      (answer) => answer.contentSecurityPolicy === null || answer.contentSecurityPolicy.includes("'unsafe-inline'"),
    );
    expect(weak).toEqual([]);
    const elsewhere = web.requests.filter((url) => new URL(url).origin !== cp.base);
    expect(elsewhere).toEqual([]);
    expect(web.pageProblems).toEqual([]);
  });
});
