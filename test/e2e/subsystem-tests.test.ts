// Subsystem tests end to end (issue 12, contract part 4: POST /api/v1/admin/settings/test): the real control plane
// (`ark-cp serve`) configured with real parts the test starts on loopback, an in-process SMTP server (smtp-server),
// an HTTP alert receiver, anvil as Base, and a real OpenID provider (oidc-provider 8.8.1) as sign-in with Google. Each check answers
// ok: true while its part runs, and ok: false with a useful detail once the part is stopped (or, for the chain,
// replaced by a node of another chain). Nothing secret in any detail.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { freePort } from '../harness/processes.js';
import { BASE_USDC } from './deposit-helpers.js';
import { api, type ControlPlane, controlPlaneCli, startControlPlane } from './host-side-helpers.js';
import { adminSession, call, PASSWORD } from './payout-helpers.js';

const ALERT_TOKEN = 'sink-token-never-shown';

async function listening(server: Server | SMTPServer['server'], port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
}
const closed = (server: { close(callback: () => void): unknown }) => new Promise<void>((resolve) => server.close(() => resolve()));

describe('subsystem tests against real parts', () => {
  let cp: ControlPlane;
  let admin = '';
  let adminKey = '';
  let anvil: Anvil;
  let smtp: SMTPServer;
  let smtpPort = 0;
  let sink: Server;
  let sinkPort = 0;
  const alerts: Array<{ headers: IncomingMessage['headers']; body: any }> = [];
  let oidc: Server;
  let oidcPort = 0;
  let issuer = '';
  const oidcClientSecret = randomBytes(16).toString('hex');

  const startSmtp = async () => {
    // Plain SMTP on loopback: no STARTTLS offered, no authentication asked.
    smtp = new SMTPServer({ disabledCommands: ['STARTTLS', 'AUTH'], authOptional: true, logger: false });
    await listening(smtp.server, smtpPort);
  };
  const startSink = async () => {
    sink = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        alerts.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        response.writeHead(204).end();
      });
    });
    await listening(sink, sinkPort);
  };
  const startOidc = async () => {
    const provider = new Provider(issuer, {
      clients: [{ client_id: 'ark', client_secret: oidcClientSecret, redirect_uris: [`${issuer}/callback`] }],
      cookies: { keys: [randomBytes(16).toString('hex')] },
    });
    oidc = createServer(provider.callback());
    await listening(oidc, oidcPort);
  };
  const test = (subsystem: string, extra: Record<string, unknown> = {}) =>
    call(cp, 'POST', '/api/v1/admin/settings/test', { token: admin, body: { subsystem, ...extra } });

  beforeAll(async () => {
    [smtpPort, sinkPort, oidcPort] = await Promise.all([freePort(), freePort(), freePort()]);
    issuer = `http://127.0.0.1:${oidcPort}`;
    anvil = await startAnvil();
    await Promise.all([startSmtp(), startSink(), startOidc()]);
    const dir = mkdtempSync(join(tmpdir(), 'ark-subsystems-'));
    const chainsFile = join(dir, 'chains.json');
    writeFileSync(
      chainsFile,
      JSON.stringify({
        networks: [{ name: 'base', chain_id: 8453, rpc_url: anvil.url, assets: [{ symbol: 'USDC', address: BASE_USDC, decimals: 6 }] }],
      }),
    );
    cp = await startControlPlane({
      env: {
        SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
        ARK_ALERT_WEBHOOK_URL: `http://127.0.0.1:${sinkPort}/hooks/ark?token=${ALERT_TOKEN}`,
        ARK_CHAINS: chainsFile,
        ARK_OAUTH_GOOGLE_CLIENT_ID: 'ark',
        ARK_OAUTH_GOOGLE_CLIENT_SECRET: oidcClientSecret,
        ARK_OAUTH_GOOGLE_ISSUER: issuer,
        ARK_SETTINGS_TESTS_PER_MIN: '14',
      },
    });
    const email = `admin-${randomBytes(4).toString('hex')}@example.test`;
    await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'admin', '--password', PASSWORD, '--verified']);
    const [key, session] = await Promise.all([
      controlPlaneCli(cp, ['keys', 'create', '--email', email, '--scopes', 'renter', '--label', 'admin-key']),
      adminSession(cp, email),
    ]);
    adminKey = JSON.parse(key).secret;
    admin = session;
  }, 180_000);

  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
    await anvil?.stop();
    if (smtp?.server.listening) await closed(smtp);
    if (sink?.listening) await closed(sink);
    if (oidc?.listening) await closed(oidc);
  });

  it('mail: an SMTP session with the configured server, then a refused one once it is stopped', async () => {
    const ok = await test('mail');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ ok: true, detail: `the SMTP server at smtp://127.0.0.1:${smtpPort} accepted a session` });
    await closed(smtp);
    const down = await test('mail');
    expect(down.body.ok).toBe(false);
    expect(down.body.detail).toContain(`smtp://127.0.0.1:${smtpPort} did not accept a session`);
    expect(down.body.detail).toContain('ECONNREFUSED');
  });

  it('alerts: a JSON POST reaches the receiver; with the receiver gone the detail says so, and never the URL token', async () => {
    const ok = await test('alerts');
    expect(ok.body).toEqual({ ok: true, detail: `the alert sink at http://127.0.0.1:${sinkPort}/hooks/ark took a test alert (HTTP 204)` });
    expect(alerts).toHaveLength(1);
    expect(alerts[0]?.headers['content-type']).toBe('application/json');
    expect(alerts[0]?.body).toMatchObject({ source: 'ark-control-plane', alert: 'settings_test', severity: 'info' });
    await closed(sink);
    const down = await test('alerts');
    expect(down.body).toEqual({ ok: false, detail: 'the alert sink could not be reached: ECONNREFUSED' });
    for (const answer of [ok, down]) expect(JSON.stringify(answer.body)).not.toContain(ALERT_TOKEN);
  });

  it('chain-access: chain id, head and finalized of the configured network; a stopped node and a node of another chain fail', async () => {
    await anvil.mine(3);
    const ok = await test('chain-access');
    expect(ok.body.ok).toBe(true);
    expect(ok.body.detail).toMatch(/^base \(chain 8453\): head \d+, finalized \d+$/);
    const [, head, finalized] = /head (\d+), finalized (\d+)/.exec(ok.body.detail) ?? [];
    expect(Number(head)).toBeGreaterThanOrEqual(3);
    expect(Number(finalized)).toBeLessThanOrEqual(Number(head));
    const port = anvil.port;
    await anvil.stop();
    const down = await test('chain-access');
    expect(down.body.ok).toBe(false);
    expect(down.body.detail).toMatch(/^base \(chain 8453\): unreachable: /);
    expect(down.body.detail).not.toContain(`127.0.0.1:${port}`);
    // Another node where the configured one was: the chain id is checked, not trusted.
    anvil = await startAnvil({ port, chainId: 10 });
    const wrong = await test('chain-access');
    expect(wrong.body).toEqual({ ok: false, detail: 'base: the RPC node serves chain 10, not 8453' });
  });

  it('auth-provider: the OpenID provider’s discovery document and keys (sign-in with Google); a stopped provider fails', async () => {
    const ok = await test('auth-provider');
    expect(ok.body.ok, ok.body.detail).toBe(true);
    expect(ok.body.detail).toMatch(
      new RegExp(
        `^google: the OpenID provider ${issuer} answered its discovery document \\(token endpoint ${issuer}/token\\) and \\d+ signing keys?$`,
      ),
    );
    expect(JSON.stringify(ok.body)).not.toContain(oidcClientSecret);
    const github = await test('auth-provider', { provider: 'github' });
    expect(github.body).toEqual({
      ok: false,
      detail: 'sign-in with github is not configured on this server (ARK_OAUTH_GITHUB_CLIENT_ID is not set)',
    });
    await closed(oidc);
    const down = await test('auth-provider');
    expect(down.body).toEqual({
      ok: false,
      detail: `google: the OpenID provider ${issuer} did not answer a valid discovery document: ECONNREFUSED`,
    });
  });

  it('takes its target only from the stored settings, is rate limited, audited, and refuses API keys', async () => {
    const target = await test('alerts', { url: 'http://127.0.0.1:9/elsewhere' });
    expect(target.status).toBe(422);
    expect((await call(cp, 'POST', '/api/v1/admin/settings/test', { token: adminKey, body: { subsystem: 'mail' } })).status).toBe(403);
    const audit = await api(cp.base, 'GET', '/api/v1/admin/audit?limit=100', { token: admin });
    const tested = (audit.body.items as any[]).filter((entry) => entry.action === 'admin.settings.tested');
    expect(tested.length).toBeGreaterThanOrEqual(9);
    // 14 a minute: the rest of this minute's allowance, then 429 UNAVAILABLE (retryable).
    let limited: { status: number; body: any } | null = null;
    for (let i = 0; i < 15 && limited === null; i++) {
      const answer = await test('mail');
      if (answer.status === 429) limited = answer;
      else expect(answer.status).toBe(200);
    }
    expect(limited?.body.error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
  });
});
