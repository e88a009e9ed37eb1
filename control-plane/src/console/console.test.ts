import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { paymentsConfigFrom } from '../config/payments.js';
import { finishDeposit } from '../store/deposits.js';
import { recordSeen, seenUsdcDeposit, writeChainsFile } from '../testing/deposits.js';
import { bearer, createTestApp, testConfig, type SeededAccount, seedAccount, type TestApp, totpCode } from '../testing/app.js';
import { machineKeyPair, sampleManifest, telemetryMessage } from '../testing/hosting.js';
import { hardwareReceiptMessage, receiptBody, signHardwareReceipt } from '../testing/receipts.js';
import { ConsoleClient as Browser } from '../testing/console-client.js';
import { deliver, fund, liveMachine, type LiveMachine, reserveJob } from '../testing/renting.js';
import { DIALECTS } from '../testing/stores.js';
import { CONSOLE_POLICY } from './session.js';
import { telemetryCharts } from './telemetry.js';

// The console over the in-process app: sessions in a cookie, CSRF on every form, pages that read the public API
// with the person's own credential, and the form actions that change an offer and pause admissions. The browser
// side (scripts, charts drawn, phone layout) is test/e2e/console.test.ts in Chromium.

const GPU0 = '00000000:01:00.0';
const GPU1 = '00000000:02:00.0';

describe.each(DIALECTS)('web console on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let live: LiveMachine;
  let renter: SeededAccount;
  let admin: SeededAccount;

  beforeAll(async () => {
    // Every sign-in of the file comes from one address; withdrawals are paid on a chain nothing is sent to here.
    const payments = paymentsConfigFrom({ ARK_CHAINS: writeChainsFile() }, (m) => new Error(m));
    t = await createTestApp(dialect, {
      configOverrides: { authAttemptsPerMinute: 1000, payments: { ...testConfig().payments, ...payments } },
    });
    t.clock.set('2026-03-01T12:02:30.000Z');
    live = await liveMachine(t.ctx, t.app, {
      manifest: sampleManifest({
        gpus: [
          { pci_address: GPU0, model: 'NVIDIA GeForce RTX 4090', vram_bytes: '25757220864' },
          { pci_address: GPU1, model: 'NVIDIA GeForce RTX 4090', vram_bytes: '25757220864' },
        ],
      }),
    });
    renter = await seedAccount(t.ctx);
    admin = await seedAccount(t.ctx, { role: 'admin', withTotp: true });
    await t.store.db.transaction().execute((trx) =>
      t.ctx.channel.apply(
        trx,
        live.machineId,
        telemetryMessage([
          { at: '2026-03-01T11:56:00.000Z', devices: [{ pci_address: GPU0, utilization_pct: 20, temperature_c: 50 }] },
          { at: '2026-03-01T11:57:00.000Z', devices: [{ pci_address: GPU0, utilization_pct: 80, temperature_c: 60 }] },
          { at: '2026-03-01T12:01:00.000Z', devices: [{ pci_address: GPU0, utilization_pct: 50, power_watts: 300 }] },
        ]),
        t.clock.now(),
      ),
    );
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('sends a visitor without a session to sign in, under a strict policy', async () => {
    const browser = new Browser(t);
    const home = await browser.get('/console');
    expect(home.statusCode).toBe(303);
    expect(home.headers.location).toBe('/console/login?next=%2Fconsole');
    const login = await browser.get('/console/login');
    expect(login.statusCode).toBe(200);
    expect(login.headers['content-security-policy']).toBe(CONSOLE_POLICY);
    expect(login.headers['content-security-policy']).not.toContain('unsafe-inline');
    expect(login.headers['x-frame-options'] ?? login.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(login.body).toContain('<form id="login"');
    // No inline script or style anywhere (the policy would refuse them).
    expect(login.body).not.toMatch(/<script>(?!\s*<\/script>)|<style|\sstyle="|\son[a-z]+="/);
    const asset = await browser.get('/console/assets/htmx.min.js');
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['content-type']).toContain('text/javascript');
    expect((await browser.get('/console/assets/nope.js')).statusCode).toBe(404);
  });

  it('signs in with the API session in an HttpOnly, SameSite=Strict cookie; a wrong password or a missing CSRF token is refused', async () => {
    const browser = new Browser(t);
    await browser.get('/console/login');
    const forged = await browser.post('/console/login', { email: renter.email, password: renter.password }, { csrf: false });
    expect(forged.statusCode).toBe(403);
    expect(forged.headers['content-type']).toContain('text/html');
    expect(forged.body).toContain('did not come from the console');
    expect(browser.cookies.has('ark_console')).toBe(false);

    const wrong = await browser.post('/console/login', { email: renter.email, password: 'not the password' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain('class="flash error"');
    expect(wrong.body).toContain('The email or the password is wrong.');

    const right = await browser.post('/console/login', { email: renter.email, password: renter.password });
    expect(right.statusCode).toBe(303);
    expect(right.headers.location).toBe('/console');
    const cookie = String([right.headers['set-cookie']].flat().find((c) => String(c).startsWith('ark_console=')));
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\/console/);
    // The cookie is a real API session.
    const token = browser.cookies.get('ark_console') as string;
    const account = await t.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(token) });
    expect(account.json()).toMatchObject({ email: renter.email, auth_method: 'session' });

    const overview = await browser.get('/console');
    expect(overview.statusCode).toBe(200);
    expect(overview.body).toContain('<h1>Overview</h1>');
    // A renter sees no hosting or operator navigation, and the operator pages refuse it.
    expect(overview.body).not.toContain('href="/console/admin"');
    expect((await browser.get('/console/admin')).statusCode).toBe(403);

    // Signing out ends the session at the service, not only in this browser.
    const out = await browser.post('/console/logout', {});
    expect(out.statusCode).toBe(303);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(token) })).statusCode).toBe(401);
    expect((await browser.get('/console/jobs')).headers.location).toBe('/console/login?next=%2Fconsole%2Fjobs');
  });

  it('answers a form posted as JSON 415 (400 when it is not even JSON) with a page that says so, never 500 (issue 22)', async () => {
    const browser = new Browser(t);
    await browser.signIn(renter);
    await browser.get('/console');
    const id = live.machineId;
    const actions = [
      '/console/login',
      '/console/logout',
      `/console/machines/${id}/offer`,
      `/console/machines/${id}/maintenance`,
      `/console/machines/${id}/nettest`,
      '/console/pair',
      `/console/jobs/${id}/stop`,
      '/console/tickets',
      '/console/admin/admissions',
    ];
    for (const url of actions) {
      for (const text of [JSON.stringify({ _csrf: browser.csrf, email: renter.email, password: renter.password }), '{"_csrf":']) {
        const res = await browser.postJson(url, text);
        const where = `${url} ${text}`;
        expect(res.statusCode, `${where}: ${res.body.slice(0, 300)}`).toBe(text.endsWith(':') ? 400 : 415);
        expect(res.headers['content-type'], where).toContain('text/html');
        expect(res.headers['content-security-policy'], where).toBe(CONSOLE_POLICY);
      }
    }
    const json = await browser.postJson('/console/login', JSON.stringify({ _csrf: browser.csrf }));
    expect(json.body).toContain('application/x-www-form-urlencoded');
  });

  it('comes back to the page it was sent from after signing in, and only to a console page', async () => {
    const browser = new Browser(t);
    const deep = await browser.get('/console/pair?code=ABCD-EFGH');
    expect(deep.headers.location).toBe('/console/login?next=%2Fconsole%2Fpair%3Fcode%3DABCD-EFGH');
    const login = await browser.get(deep.headers.location as string);
    expect(login.body).toContain('name="next" value="/console/pair?code=ABCD-EFGH"');
    const back = await browser.post('/console/login', {
      email: live.host.email,
      password: live.host.password,
      next: '/console/pair?code=ABCD-EFGH',
    });
    expect(back.headers.location).toBe('/console/pair?code=ABCD-EFGH');
    for (const next of [
      '//evil.example/console',
      'https://evil.example/console',
      '/api/v1/account',
      '/console\\@evil.example',
      '/consolex',
    ]) {
      const other = new Browser(t);
      await other.get('/console/login');
      const answer = await other.post('/console/login', { email: live.host.email, password: live.host.password, next });
      expect(answer.headers.location, next).toBe('/console');
    }
  });

  it('shows a host its machine, the telemetry as chart series, and changes the offer through the form', async () => {
    const browser = new Browser(t);
    expect((await browser.signIn(live.host)).statusCode).toBe(303);
    const list = await browser.get('/console/machines');
    expect(list.body).toContain(`data-machine-id="${live.machineId}"`);
    expect(list.body).toContain(`href="/console/machines/${live.machineId}"`);

    const detail = await browser.get(`/console/machines/${live.machineId}?window=1h`);
    expect(detail.statusCode).toBe(200);
    const chartData = JSON.parse(
      /<script type="application\/json" id="telemetry-data">([\s\S]*?)<\/script>/.exec(detail.body)?.[1] ?? '{}',
    );
    // The charts span the window asked for, ending now.
    expect(chartData.to - chartData.from).toBe(3600);
    expect(chartData.to).toBe(t.clock.now().getTime() / 1000);
    const data = chartData.series;
    const utilization = data.find((s: any) => s.gpu === 0 && s.metric === 'utilization');
    // Two buckets: 11:55 (20 and 80) and 12:00 (50).
    expect(utilization).toMatchObject({ pci: GPU0, min: [20, 50], avg: [50, 50], max: [80, 50], latest: { min: 50, avg: 50, max: 50 } });
    expect(utilization.t).toEqual([Date.parse('2026-03-01T11:55:00Z') / 1000, Date.parse('2026-03-01T12:00:00Z') / 1000]);
    expect(data.find((s: any) => s.gpu === 1 && s.metric === 'utilization')).toMatchObject({ t: [], latest: null });
    expect(detail.body).toContain('data-gpu="0" data-metric="utilization"');
    expect(detail.body).toContain('data-gpu="1" data-metric="memory"');
    // The page reads without scripts: the newest figures are in the caption.
    expect(detail.body).toContain('Utilization (%): latest 50 / 50 / 50');

    const version = /name="expected_version" value="([0-9]+)"/.exec(detail.body)?.[1] as string;
    const form = {
      expected_version: version,
      rate_usd_per_hour: '2.75',
      included_disk_gib: '80',
      included_egress_gib: '200',
      available_from: '2026-03-01T12:00:00Z',
      available_until: '2026-06-01T00:00:00Z',
    };
    const bad = await browser.post(`/console/machines/${live.machineId}/offer`, { ...form, rate_usd_per_hour: 'cheap' });
    expect(bad.statusCode).toBe(303);
    expect((await browser.get(`/console/machines/${live.machineId}`)).body).toContain('The rate is a USD amount per hour');

    const saved = await browser.post(`/console/machines/${live.machineId}/offer`, form);
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe(`/console/machines/${live.machineId}`);
    const after = await browser.get(`/console/machines/${live.machineId}`);
    expect(after.body).toMatch(/class="flash ok"[^>]*>Offer saved at \$2\.75\/h: version/);
    expect(after.body).toContain('id="offer-rate">$2.75/h');
    const machine = await t.app.inject({
      method: 'GET',
      url: `/api/v1/hosts/machines/${live.machineId}`,
      headers: bearer(live.host.apiKey),
    });
    expect(machine.json().offer).toMatchObject({
      rate_micro_per_hour: '2750000',
      included_quotas: { included_disk_gib: 80, included_egress_gib: 200 },
    });

    // A stale form (the version it was read at) is refused with the API's own reason, and changes nothing.
    await browser.post(`/console/machines/${live.machineId}/offer`, { ...form, rate_usd_per_hour: '9' });
    expect((await browser.get(`/console/machines/${live.machineId}`)).body).toContain('class="flash error"');
    expect(
      (await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${live.machineId}`, headers: bearer(live.host.apiKey) })).json()
        .offer.rate_micro_per_hour,
    ).toBe('2750000');

    // Maintenance windows: added, listed, removed; each a new offer version with the rate kept.
    await browser.post(`/console/machines/${live.machineId}/maintenance`, {
      starts_at: '2026-04-01T02:00:00Z',
      ends_at: '2026-04-01T04:00:00Z',
      reason: 'driver upgrade',
    });
    const withWindow = await browser.get(`/console/machines/${live.machineId}`);
    expect(withWindow.body).toContain('driver upgrade');
    expect(withWindow.body).toContain('class="maintenance-remove inline"');
    await browser.post(`/console/machines/${live.machineId}/maintenance/remove`, { starts_at: '2026-04-01T02:00:00Z' });
    const offer = (
      await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${live.machineId}`, headers: bearer(live.host.apiKey) })
    ).json().offer;
    expect(offer).toMatchObject({ rate_micro_per_hour: '2750000', maintenance_windows: [] });

    // Another host's machine is not found, as in the API.
    const other = await seedAccount(t.ctx, { role: 'host' });
    const stranger = new Browser(t);
    await stranger.signIn(other);
    expect((await stranger.get(`/console/machines/${live.machineId}`)).statusCode).toBe(404);
  });

  it('lets a renter withdraw through the form: the password steps up, a new address is registered, the request is made', async () => {
    const saver = await seedAccount(t.ctx);
    await fund(t.ctx, saver.accountId, 40_000_000n);
    const browser = new Browser(t);
    await browser.signIn(saver);
    const page = await browser.get('/console/balance');
    expect(page.body).toContain('<form id="withdraw"');
    expect(page.body).toContain('id="available">$40.00');
    const address = `0x${'ab'.repeat(20)}`;
    // A wrong password: the API's refusal, nothing requested.
    await browser.post('/console/balance/withdraw', { amount_usd: '12.5', address, step_up: 'not it' });
    expect((await browser.get('/console/balance')).body).toContain('class="flash error"');
    await browser.post('/console/balance/withdraw', { amount_usd: '12.5', address, step_up: saver.password });
    const after = await browser.get('/console/balance');
    expect(after.body).toMatch(/class="flash ok"[^>]*>Withdrawal of \$12\.50 requested/);
    const listed = await t.app.inject({ method: 'GET', url: '/api/v1/withdrawals', headers: bearer(saver.apiKey) });
    expect(listed.json().items).toMatchObject([{ kind: 'withdrawal', amount_micro: '12500000', address: address.toLowerCase() }]);
    // The address is now one to choose from.
    expect(after.body).toContain(`web console: ${address.toLowerCase()}`);
  });

  it('lets a host withdraw its available balance from the balance page, as a withdrawal (issue 22)', async () => {
    const host = await seedAccount(t.ctx, { role: 'host' });
    await fund(t.ctx, host.accountId, 3_000_000n);
    const browser = new Browser(t);
    await browser.signIn(host);
    expect((await browser.get('/console/balance')).body).toContain('<form id="withdraw"');
    await browser.post('/console/balance/withdraw', { amount_usd: '3', address: `0x${'cd'.repeat(20)}`, step_up: host.password });
    expect((await browser.get('/console/balance')).body).toMatch(/class="flash ok"[^>]*>Withdrawal of \$3\.00 requested/);
    const listed = await t.app.inject({ method: 'GET', url: '/api/v1/withdrawals', headers: bearer(host.apiKey) });
    expect(listed.json().items).toMatchObject([{ kind: 'withdrawal', amount_micro: '3000000' }]);
  });

  it('tells a renter who never hosted that the host pages need hosting, without an error page', async () => {
    const newcomer = await seedAccount(t.ctx);
    const browser = new Browser(t);
    await browser.signIn(newcomer);
    for (const path of ['/console/market', '/console/earnings', '/console/machines']) {
      const res = await browser.get(path);
      expect(res.statusCode, path).toBe(200);
      expect(res.body, path).toMatch(/class="flash error"[^>]*>This operation needs the host scope\./);
    }
  });

  it('shows a renter its job with events and charges, and stops it from the form', async () => {
    const spender = await seedAccount(t.ctx);
    await fund(t.ctx, spender.accountId, 50_000_000n);
    const { jobId } = await reserveJob(t.app, spender, live);
    const browser = new Browser(t);
    await browser.signIn(spender);
    const list = await browser.get('/console/jobs');
    expect(list.body).toContain(`data-job-id="${jobId}"`);
    expect(list.body).toContain('state-RESERVED">RESERVED');
    const detail = await browser.get(`/console/jobs/${jobId}`);
    expect(detail.statusCode).toBe(200);
    expect(detail.body).toContain('id="job-state">RESERVED');
    // Live while the job lives: the part refreshes itself.
    expect(detail.body).toContain(`hx-get="/console/jobs/${jobId}?part=job&amp;shown=RESERVED"`);
    const events = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/events`, headers: bearer(spender.apiKey) });
    for (const event of events.json().items) expect(detail.body).toContain(`<td class="mono">${event.kind}</td>`);
    // The refresh answers only the live part.
    const part = await t.app.inject({
      method: 'GET',
      url: `/console/jobs/${jobId}?part=job`,
      headers: { cookie: `ark_console=${browser.cookies.get('ark_console')}`, 'hx-request': 'true' },
    });
    expect(part.body.startsWith('<div id="job-live"')).toBe(true);
    // No logs before the container runs: no section, and the fragment says why and stops polling (issue 25 item 2).
    expect(detail.body).not.toContain(`hx-get="/console/jobs/${jobId}/logs"`);
    const logs = await browser.get(`/console/jobs/${jobId}/logs`);
    expect(logs.statusCode).toBe(200);
    expect(logs.body).toContain('Logs are kept while the job runs and through its retrieval window after it stopped; it is RESERVED');
    expect(logs.body).not.toContain('log-poll');
    await browser.post(`/console/jobs/${jobId}/stop`, { reason: 'done from the console' });
    const stopped = await browser.get(`/console/jobs/${jobId}`);
    expect(stopped.body).toMatch(/class="flash ok"[^>]*>Stopping: the job is/);
    const job = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}`, headers: bearer(spender.apiKey) });
    expect(['STOPPING', 'STOPPED', 'CLEANING', 'CLOSED']).toContain(job.json().state);
    // Someone else's job is not found.
    const other = new Browser(t);
    await other.signIn(renter);
    expect((await other.get(`/console/jobs/${jobId}`)).statusCode).toBe(404);
  });

  it('opens a ticket about a job, an operator answers it, the opener reads the answer; nobody else can', async () => {
    const opener = await seedAccount(t.ctx);
    await fund(t.ctx, opener.accountId, 50_000_000n);
    const { jobId } = await reserveJob(t.app, opener, live);
    const browser = new Browser(t);
    await browser.signIn(opener);
    expect((await browser.get(`/console/jobs/${jobId}`)).body).toContain(`href="/console/tickets?job=${jobId}"`);
    const form = await browser.get(`/console/tickets?job=${jobId}`);
    expect(form.body).toContain(`name="job_id" class="mono" value="${jobId}"`);
    const opened = await browser.post('/console/tickets', {
      category: 'rental',
      job_id: jobId,
      text: 'The GPU <b>vanished</b>\nafter 5 minutes.',
    });
    const ticketPath = opened.headers.location as string;
    expect(ticketPath).toMatch(/^\/console\/tickets\/[0-9a-f-]{36}$/);
    const mine = await browser.get(ticketPath);
    // Plain text, escaped: what the person wrote, never markup.
    expect(mine.body).toContain('The GPU &lt;b&gt;vanished&lt;/b&gt;\nafter 5 minutes.');

    const operator = new Browser(t);
    await operator.signIn(admin);
    expect((await operator.get('/console/admin/tickets?state=open')).body).toContain(`href="${ticketPath}"`);
    await operator.get(ticketPath);
    await operator.post(`${ticketPath}/messages`, { text: 'We moved you to another machine.' });
    const answered = await browser.get(ticketPath);
    expect(answered.body).toContain('class="message from-admin"');
    expect(answered.body).toContain('We moved you to another machine.');
    const stranger = new Browser(t);
    await stranger.signIn(renter);
    expect((await stranger.get(ticketPath)).statusCode).toBe(404);
  });

  it('approves a rig’s pairing code: looked up first, then approved, and the machine is the host’s', async () => {
    const host = await seedAccount(t.ctx, { role: 'host' });
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/hosts/pairings', payload: { manifest: sampleManifest() } });
    const code = created.json().user_code as string;
    const browser = new Browser(t);
    await browser.signIn(host);
    const looked = await browser.get(`/console/pair?code=${encodeURIComponent(code)}`);
    expect(looked.body).toContain('This rig asks to join');
    expect(looked.body).toContain('<form id="pair"');
    const wrong = await browser.get('/console/pair?code=NOPE-NOPE');
    expect(wrong.body).toContain('class="flash error"');
    await browser.get(`/console/pair?code=${encodeURIComponent(code)}`);
    const approved = await browser.post('/console/pair', { user_code: code, go_live: 'on' });
    expect(approved.headers.location).toBe('/console/machines');
    expect((await browser.get('/console/machines')).body).toContain('Approved: the rig enrolls at its next poll');
    const polled = await t.app.inject({
      method: 'POST',
      url: '/api/v1/hosts/pairings/poll',
      payload: { pairing_id: created.json().pairing_id, poll_secret: created.json().poll_secret },
    });
    expect(polled.json().status).toBe('approved');
  });

  it('renders every page of each role without an error', async () => {
    const pages: Array<[SeededAccount, string[]]> = [
      [renter, ['/console', '/console/jobs', '/console/balance', '/console/tickets']],
      [live.host, ['/console', '/console/machines', '/console/pair', '/console/earnings', '/console/market', '/console/market?window=7d']],
      [
        admin,
        [
          '/console/admin',
          '/console/admin/withdrawals',
          '/console/admin/deposits',
          '/console/admin/subsystems',
          '/console/admin/tickets',
          '/console/admin/tickets?state=open',
        ],
      ],
    ];
    for (const [account, paths] of pages) {
      const browser = new Browser(t);
      await browser.signIn(account);
      for (const path of paths) {
        const res = await browser.get(path);
        expect(res.statusCode, `${path}: ${res.body.slice(0, 300)}`).toBe(200);
        expect(res.body).toMatch(/<main>[\s\S]*<h1>/);
        expect(res.body, path).not.toContain('class="flash error"');
      }
    }
    // A subsystem test answers its real result (no SMTP here: a failure, said as such).
    const browser = new Browser(t);
    await browser.signIn(admin);
    await browser.get('/console/admin/subsystems');
    await browser.post('/console/admin/subsystems', { subsystem: 'mail' });
    expect((await browser.get('/console/admin/subsystems')).body).toMatch(/class="flash error"[^>]*>mail: failed: /);
  });

  it('lets an operator pause and resume admissions with a TOTP code typed in the form', async () => {
    const browser = new Browser(t);
    expect((await browser.signIn(admin)).statusCode).toBe(303);
    const page = await browser.get('/console/admin');
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/data-fleet="machines-total">1</);
    expect(page.body).toContain('id="admissions-state" class="state state-open">open');

    // Without a code the session has no fresh step-up: the API's refusal is shown, nothing changes.
    await browser.post('/console/admin/admissions', { enabled: 'false', reason: 'incident 42' });
    const refused = await browser.get('/console/admin');
    expect(refused.body).toContain('Enter a current code from your authenticator app.');
    expect(refused.body).toContain('state-open">open');

    await browser.post('/console/admin/admissions', {
      enabled: 'false',
      reason: 'incident 42',
      totp_code: totpCode(admin.totpSecret as string, t.clock),
    });
    const paused = await browser.get('/console/admin');
    expect(paused.body).toContain('Admissions paused');
    expect(paused.body).toContain('id="admissions-state" class="state state-paused">paused');
    const state = await t.app.inject({ method: 'GET', url: '/api/v1/admin/admissions', headers: bearer(admin.sessionToken) });
    expect(state.json()).toMatchObject({ enabled: false, reason: 'incident 42' });

    // The step-up stays fresh for a while: resuming needs no second code.
    await browser.post('/console/admin/admissions', { enabled: 'true', reason: 'incident 42 resolved' });
    expect((await browser.get('/console/admin')).body).toContain('state-open">open');
  });

  it('shows held deposits to an operator, who credits one over the cap with a reason and a TOTP code', async () => {
    await t.clock.advance(90_000);
    const id = await recordSeen(t.store, seenUsdcDeposit(renter.accountId, 11_000_000n), t.clock.now());
    await t.store.db.transaction().execute((trx) =>
      finishDeposit(trx, id, 'SEEN', 'HELD', {
        amountMicro: 11_000_000n,
        reason: 'exceeds_balance_cap',
        price: null,
        postingId: null,
        at: t.clock.now(),
      }),
    );
    const browser = new Browser(t);
    await browser.signIn(admin);
    const page = await browser.get('/console/admin/deposits');
    expect(page.body).toContain(`data-deposit-id="${id}"`);
    expect(page.body).toContain('$11.00');
    await browser.post(`/console/admin/deposits/${id}/resolve`, {
      action: 'credit',
      reason: 'verified with the customer',
      totp_code: totpCode(admin.totpSecret as string, t.clock),
    });
    const after = await browser.get('/console/admin/deposits');
    expect(after.body).toContain(`Credited deposit ${id.slice(0, 8)}`);
    expect(after.body).not.toContain(`data-deposit-id="${id}"`);
    const balance = await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance?limit=100', headers: bearer(renter.apiKey) });
    expect(balance.json().deposits.items.find((d: { deposit_id: string }) => d.deposit_id === id)).toMatchObject({
      state: 'CREDITED',
      reason: 'operator_override',
    });
  });

  // Last: it enrolls a second machine, which the fleet figures above do not count.
  it('shows a renter the marketplace with each machine’s verified score, filtered on a minimum score (issue 24 item 2)', async () => {
    const keys = machineKeyPair();
    const scored = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: [] }), publicKey: keys.publicKey });
    const body = receiptBody(scored.machineId, 1, t.clock.now());
    await deliver(t.ctx, scored.machineId, hardwareReceiptMessage(signHardwareReceipt(body, keys.sign)));
    const browser = new Browser(t);
    await browser.signIn(renter);
    const rowOf = (html: string, machineId: string) =>
      new RegExp(`<tr data-machine-id="${machineId}"[^>]*>[\\s\\S]*?</tr>`).exec(html)?.[0];
    const market = await browser.get('/console/offers');
    expect(market.statusCode).toBe(200);
    expect(market.body).toContain('<h1>Marketplace</h1>');
    const row = rowOf(market.body, scored.machineId);
    expect(row).toContain('<td data-label="Score" class="score">154.9</td>');
    expect(row).toContain(`/api/v1/machines/${scored.machineId}/verification`);
    // The unscored machine shows no score; a minimum leaves only what reaches it.
    expect(rowOf(market.body, live.machineId)).toContain('<td data-label="Score" class="score">-</td>');
    const filtered = await browser.get('/console/offers?min_score=150');
    expect(rowOf(filtered.body, scored.machineId)).toBeDefined();
    expect(rowOf(filtered.body, live.machineId)).toBeUndefined();
    const malformed = await browser.get('/console/offers?min_score=lots');
    expect(malformed.statusCode).toBe(200);
    expect(malformed.body).toContain('class="flash error"');

    // A failed self-test unlists it: gone from the marketplace, and its host's page says why.
    const failed = receiptBody(scored.machineId, 2, t.clock.now(), {
      ok: false,
      error: 'benchmark ran past 600000 ms',
      benchmark: undefined,
    });
    await deliver(t.ctx, scored.machineId, hardwareReceiptMessage(signHardwareReceipt(failed, keys.sign)));
    expect(rowOf((await browser.get('/console/offers')).body, scored.machineId)).toBeUndefined();
    const host = new Browser(t);
    await host.signIn(scored.host);
    const page = await host.get(`/console/machines/${scored.machineId}`);
    expect(page.body).toContain('154.9');
    expect(page.body).toMatch(
      /class="warn hardware-hold">The self-test failed: benchmark ran past 600000 ms\. Not offered until a self-test agrees\./,
    );
  });
});

describe('telemetry chart series', () => {
  it('follows the manifest order, adds unknown devices after it, and skips buckets without the metric', () => {
    const series = telemetryCharts({ manifest: { gpus: [{ pci_address: 'b', model: 'B' }] } }, [
      {
        bucket: '2026-03-01T12:00:00.000Z',
        devices: [{ pci_address: 'a', memory_used_bytes: { min: 2 ** 30, avg: 2 ** 31, max: 3 * 2 ** 30 } }],
      },
      { bucket: '2026-03-01T12:05:00.000Z', devices: [{ pci_address: 'b', power_watts: { min: 100, avg: 150.123, max: 200 } }] },
    ]);
    expect(series.map((s) => `${s.gpu}:${s.pci}:${s.metric}`)).toEqual([
      '0:b:utilization',
      '0:b:temperature',
      '0:b:power',
      '0:b:memory',
      '1:a:utilization',
      '1:a:temperature',
      '1:a:power',
      '1:a:memory',
    ]);
    expect(series[2]).toMatchObject({ t: [1772366700], min: [100], avg: [150.12], max: [200] });
    expect(series[7]).toMatchObject({ model: 'unknown GPU', unit: 'GiB', min: [1], avg: [2], max: [3] });
    expect(series[0]).toMatchObject({ t: [], latest: null });
  });
});
