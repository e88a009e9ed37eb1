import type { SettingsTestRequest, SettingsTestResult } from '@ark/shared';
import nodemailer from 'nodemailer';
import type { ChainReader } from '../../chain/reader.js';
import type { Clock } from '../../clock.js';
import type { ChainNetwork } from '../../domain/payments/chains.js';
import { appendAudit } from '../../store/audit.js';
import type { Store } from '../../store/db.js';
import { type AlertSink, describeFetchError } from '../alerts/sink.js';

// POST /api/v1/admin/settings/test: each subsystem checked against its stored setting (never a target from the
// request), answering the real result in words an operator can act on, with nothing secret in them: no
// credentials, no RPC URLs (they often carry an API key), no query strings.

export interface SettingsTestDeps {
  store: Store;
  clock: Clock;
  settings: {
    smtpUrl: string | null;
    oidcIssuer: string | null;
    networks: readonly ChainNetwork[];
  };
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
    result = await withTimeout(check(deps, adminAccountId, request), CHECK_TIMEOUT_MS + 2_000);
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
      return checkAuthProvider(deps.settings.oidcIssuer, request.provider);
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

/** Fetches the configured OpenID provider's discovery document and checks it names the same issuer and its endpoints. */
async function checkAuthProvider(issuer: string | null, provider: 'github' | 'google' | undefined): Promise<SettingsTestResult> {
  if (provider !== undefined) {
    return { ok: false, detail: `sign-in with ${provider} is not configured on this server (the configured provider is ARK_OIDC_ISSUER)` };
  }
  if (issuer === null) return { ok: false, detail: 'no sign-in provider is configured (ARK_OIDC_ISSUER is not set)' };
  const url = `${issuer}/.well-known/openid-configuration`;
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
  } catch (error) {
    return { ok: false, detail: `the OpenID provider ${issuer} could not be reached: ${describeFetchError(error, CHECK_TIMEOUT_MS)}` };
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => {});
    return { ok: false, detail: `the OpenID provider ${issuer} answered HTTP ${response.status} for its discovery document` };
  }
  let document: Record<string, unknown>;
  try {
    document = (await response.json()) as Record<string, unknown>;
  } catch {
    return { ok: false, detail: `the OpenID provider ${issuer} answered a discovery document that is not JSON` };
  }
  const named = typeof document.issuer === 'string' ? document.issuer.replace(/\/$/, '') : null;
  if (named !== issuer)
    return { ok: false, detail: `the discovery document at ${issuer} names another issuer (${String(document.issuer)})` };
  const missing = ['authorization_endpoint', 'token_endpoint', 'jwks_uri'].filter((field) => typeof document[field] !== 'string');
  if (missing.length > 0) return { ok: false, detail: `the discovery document of ${issuer} lacks ${missing.join(', ')}` };
  return {
    ok: true,
    detail: `the OpenID provider ${issuer} answered its discovery document (token endpoint ${publicPartOf(String(document.token_endpoint))})`,
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

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
