import type { SettingsTestRequest, SettingsTestResult } from '@ark/shared';
import nodemailer from 'nodemailer';
import type { ChainReader } from '../../chain/reader.js';
import type { Clock, ClockTimer } from '../../clock.js';
import type { OAuthProviderName } from '../../config/oauth.js';
import type { ChainNetwork } from '../../domain/payments/chains.js';
import type { OAuthProviderClient } from '../../oauth/providers.js';
import { appendAudit } from '../../store/audit.js';
import type { Store } from '../../store/db.js';
import type { AlertSink } from '../alerts/sink.js';

// POST /api/v1/admin/settings/test: each subsystem checked against its stored setting (never a target from the
// request), answering the real result in words an operator can act on, with nothing secret in them: no
// credentials, no RPC URLs (they often carry an API key), no query strings.

export interface SettingsTestDeps {
  store: Store;
  clock: Clock;
  settings: {
    smtpUrl: string | null;
    networks: readonly ChainNetwork[];
  };
  /** The configured sign-in providers (ARK_OAUTH_*): each one's check talks to the provider with this server's client. */
  oauthProviders: Partial<Record<OAuthProviderName, OAuthProviderClient>>;
  alerts: AlertSink;
  chainReaderFor(network: ChainNetwork): ChainReader;
}

/** Each check gets this long; a part that hangs is a failed check, not a hung request. */
const CHECK_TIMEOUT_MS = 8_000;

export async function testSubsystem(
  deps: SettingsTestDeps,
  adminAccountId: string,
  request: SettingsTestRequest,
): Promise<SettingsTestResult> {
  let result: SettingsTestResult;
  try {
    result = await withTimeout(deps.clock, check(deps, adminAccountId, request), CHECK_TIMEOUT_MS + 2_000);
  } catch (error) {
    result = { ok: false, detail: `the check failed: ${redact(error instanceof Error ? error.message : String(error))}` };
  }
  await appendAudit(deps.store.db, {
    at: deps.clock.now(),
    actorAccountId: adminAccountId,
    action: 'admin.settings.tested',
    subject: request.subsystem,
    detail: { ok: result.ok, ...(request.provider ? { provider: request.provider } : {}) },
  });
  return result;
}

function check(deps: SettingsTestDeps, adminAccountId: string, request: SettingsTestRequest): Promise<SettingsTestResult> {
  switch (request.subsystem) {
    case 'mail':
      return checkMail(deps.settings.smtpUrl);
    case 'alerts':
      return checkAlerts(deps.alerts, adminAccountId);
    case 'chain-access':
      return checkChains(deps);
    case 'auth-provider':
      return checkAuthProviders(deps.oauthProviders, request.provider);
  }
}

/** Opens an SMTP session with the configured server (greeting, EHLO, STARTTLS and AUTH when the URL asks) and closes it. */
async function checkMail(smtpUrl: string | null): Promise<SettingsTestResult> {
  if (smtpUrl === null) return { ok: false, detail: 'SMTP is not configured (SMTP_URL is not set): mail goes to the log only' };
  const target = publicPartOf(smtpUrl);
  const transport = nodemailer.createTransport({
    url: smtpUrl,
    connectionTimeout: CHECK_TIMEOUT_MS,
    greetingTimeout: CHECK_TIMEOUT_MS,
    socketTimeout: CHECK_TIMEOUT_MS,
  });
  try {
    await transport.verify();
    return { ok: true, detail: `the SMTP server at ${target} accepted a session` };
  } catch (error) {
    const err = error as { code?: string; responseCode?: number; message?: string };
    const reason = [err.code, err.responseCode ? `SMTP ${err.responseCode}` : null, redact(err.message ?? '')].filter(Boolean).join(': ');
    return { ok: false, detail: `the SMTP server at ${target} did not accept a session: ${reason}` };
  } finally {
    transport.close();
  }
}

async function checkAlerts(alerts: AlertSink, adminAccountId: string): Promise<SettingsTestResult> {
  const delivery = await alerts.send({
    name: 'settings_test',
    severity: 'info',
    summary: 'Test alert from the subsystem test: the alert sink works.',
    details: { requested_by: adminAccountId },
  });
  if (!delivery.delivered) return { ok: false, detail: redact(delivery.detail) };
  return { ok: true, detail: `the alert sink at ${alerts.target} took a test alert (HTTP ${delivery.status})` };
}

/** Every configured network: its chain id (checked), head and finalized block. */
async function checkChains(deps: SettingsTestDeps): Promise<SettingsTestResult> {
  const networks = deps.settings.networks;
  if (networks.length === 0) return { ok: false, detail: 'no network is configured (ARK_CHAINS is not set)' };
  const lines = await Promise.all(
    networks.map(async (network): Promise<{ ok: boolean; line: string }> => {
      const reader = deps.chainReaderFor(network);
      try {
        const chainId = await reader.chainId();
        if (chainId !== network.chainId) {
          return { ok: false, line: `${network.name}: the RPC node serves chain ${chainId}, not ${network.chainId}` };
        }
        const { latest, finalized } = await reader.heads();
        return { ok: true, line: `${network.name} (chain ${chainId}): head ${latest.number}, finalized ${finalized.number}` };
      } catch (error) {
        return { ok: false, line: `${network.name} (chain ${network.chainId}): unreachable: ${rpcFailure(error)}` };
      } finally {
        reader.close?.();
      }
    }),
  );
  return { ok: lines.every((l) => l.ok), detail: lines.map((l) => l.line).join('; ') };
}

/**
 * The named provider, or every configured one: Google's discovery document and signing keys, GitHub's token endpoint
 * with this server's client and its API (oauth/providers.ts). ok only when each answers.
 */
async function checkAuthProviders(
  providers: Partial<Record<OAuthProviderName, OAuthProviderClient>>,
  provider: OAuthProviderName | undefined,
): Promise<SettingsTestResult> {
  const variable = (name: OAuthProviderName) => `ARK_OAUTH_${name.toUpperCase()}_CLIENT_ID`;
  if (provider !== undefined && !providers[provider]) {
    return { ok: false, detail: `sign-in with ${provider} is not configured on this server (${variable(provider)} is not set)` };
  }
  const names = provider !== undefined ? [provider] : (['github', 'google'] as const).filter((name) => providers[name]);
  if (names.length === 0) {
    return {
      ok: false,
      detail: 'no sign-in provider is configured (ARK_OAUTH_GITHUB_CLIENT_ID and ARK_OAUTH_GOOGLE_CLIENT_ID are not set)',
    };
  }
  const results = await Promise.all(names.map((name) => (providers[name] as OAuthProviderClient).check()));
  return {
    ok: results.every((result) => result.ok),
    // The configured endpoints are named (the configuration refuses credentials and queries in them); failures
    // arrive without URLs (oauth/providers.ts).
    detail: names.map((name, i) => `${name}: ${results[i]?.detail ?? ''}`).join('; '),
  };
}

/** scheme://host:port of a URL: no credentials, path or query. */
function publicPartOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '(an unparsable URL)';
  }
}

/** A viem failure without the RPC URL (its message names it, API key and all). */
function rpcFailure(error: unknown): string {
  const err = error as { shortMessage?: string; details?: string; cause?: { code?: string }; message?: string };
  const parts = [err.shortMessage ?? err.message ?? String(error), err.details ?? err.cause?.code].filter(Boolean) as string[];
  return redact(parts.join(': '));
}

/** Drops anything that looks like a URL (credentials, keys in paths and queries) from a message. */
function redact(text: string): string {
  return text.replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>').slice(0, 500);
}

async function withTimeout<T>(clock: Clock, work: Promise<T>, ms: number): Promise<T> {
  let timer: ClockTimer | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = clock.setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clock.clearTimeout(timer);
  }
}
