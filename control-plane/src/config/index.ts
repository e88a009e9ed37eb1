import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MICRO_AMOUNT_MAX } from '@ark/shared/limits';
import { type PaymentsConfig, paymentsConfigFrom } from './payments.js';
import { type OAuthConfig, oauthConfigFrom } from './oauth.js';
import { type OperationsConfig, operationsConfigFrom } from './operations.js';
import { type RelayConfig, relayConfigFrom } from './relay.js';
import { type ReadinessConfig, readinessConfigFrom } from './readiness.js';
import { type ReliabilityConfig, reliabilityConfigFrom } from './reliability.js';
import { type SelftestConfig, selftestConfigFrom } from './selftest.js';
import { type WebhooksConfig, webhooksConfigFrom } from './webhooks.js';
import { type X402Config, x402ConfigFrom } from './x402.js';
import { type PayoutsConfig, payoutsConfigFrom } from './payouts.js';
import { type EarningsConfig, earningsConfigFrom } from './earnings.js';
import { type TreasuryConfig, treasuryConfigFrom } from './treasury.js';
import { type ProxiesConfig, proxiesConfigFrom } from './proxies.js';
import { type FaultsConfig, faultsConfigFrom } from '../faults.js';

/** Everything the control plane reads from its environment, parsed once in main.ts and passed down. */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | null;
  /** 32 bytes: HMAC for cursors, AES-256-GCM for secrets at rest. */
  secretKey: Buffer;
  publicBaseUrl: string;
  /**
   * ARK_REPLICA_URL: where the other replicas reach this one (an internal address), for the relay's requests to a
   * machine whose channel this replica holds; null for a single replica.
   */
  replicaUrl: string | null;
  redisUrl: string | null;
  smtp: { url: string | null; from: string };
  bodyLimitBytes: number;
  sessionTtlMs: number;
  stepUpTtlMs: number;
  /** Sign-in, sign-up and step-up attempts allowed per minute, per source address and per email or account. */
  authAttemptsPerMinute: number;
  /** How long an emailed verification link stays valid. */
  emailVerificationTtlMs: number;
  platformFeeBps: number;
  /** Hosting: machines a host may pair in its first 24 hours of hosting. */
  newHostMachineCap: number;
  /** Hosting: the machine rate of the offer seeded at go-live, micro-USDC per hour. */
  seedRateMicroPerHour: bigint;
  /** Hosting: how often agents send heartbeats; a machine is online within 3 intervals of its last one. */
  heartbeatIntervalMs: number;
  /** Hosting: listed machines a market bucket needs before its metrics are reported (GET /api/v1/hosts/market). */
  marketMinSampleSize: number;
  /** Hosting: base URL agents measure their network against (ping, download, upload); null: this control plane's own. */
  nettestEndpoint: string | null;
  /** Hosting: where a person enters a pairing code (RFC 8628 verification_uri); null: `<public URL>/pair`. */
  pairingVerificationUri: string | null;
  logLevel: string;
  /** `pretty`: one readable line per event (pino-pretty), for a person at a terminal; `json`: one JSON object per line, for collectors. */
  logFormat: 'pretty' | 'json';
  sqliteSynchronous: 'FULL' | 'NORMAL';
  /** Renting: the terms version quotes carry (accepted by reserving); agent registration challenges carry it too. */
  termsVersion: string;
  /** Where the terms of termsVersion are published (agent registration answers it as terms_url). */
  termsUrl: string;
  /** Agents: how long an EIP-4361 challenge (registration, wallet step-up) stays valid; at most 5 minutes. */
  agentChallengeTtlMs: number;
  /** Renting: how often agents send meter receipts for a running job. */
  meterIntervalS: number;
  /** Renting: clock skew tolerated between an agent's receipt periods and the control plane's wall time. */
  meterSkewMs: number;
  /** Renting: how long a stopped job's files stay readable over SFTP before the job is cleaned. */
  retrievalWindowS: number;
  /** Renting: how long a machine may stay silent (no heartbeat) before its running jobs move to RECONCILING. */
  jobAgentGraceMs: number;
  /** Renting: how long a job stays RECONCILING before it fails and its hold is released. */
  jobReconcileTimeoutMs: number;
  /** Renting: how long a job may stay RESERVED or STARTING before it is cancelled. */
  jobStartTimeoutMs: number;
  /** Renting: every account's default spend-rate cap (summed total rate of its unstopped jobs), micro-USDC per hour. */
  spendRateCapMicroPerHour: bigint;
  /** Renting: the host renters reach job endpoints at when the agent reports none; null: the public URL's host. */
  jobAccessHost: string | null;
  /** HTTP: the whole request (headers and body) must arrive within this; a slower client gets 408 and is closed. */
  httpRequestTimeoutMs: number;
  /** HTTP: the request line and headers must arrive within this (at most the request timeout). */
  httpHeadersTimeoutMs: number;
  /** HTTP: connections one client address may hold open at once; 0: no bound. Behind a balancer see `proxies`. */
  httpMaxConnectionsPerAddress: number;
  /** HTTP: which peers' PROXY protocol headers and X-Forwarded-For are believed for the client address (config/proxies.ts). */
  proxies: ProxiesConfig;
  /** Metrics: where a second listener serves /metrics; null port: /metrics is served on the API listener. */
  metricsHost: string;
  metricsPort: number | null;
  /** Metrics: the bearer token /metrics requires, wherever it is served; null: none. */
  metricsToken: string | null;
  /** Money in: watched networks, deposit addresses, balance cap and minimum (config/payments.ts). */
  payments: PaymentsConfig;
  /** Operator controls: the alert webhook, subsystem test rate (config/operations.ts). */
  operations: OperationsConfig;
  /** Sign-in with GitHub and Google: clients, endpoints, how long a started sign-in lasts (config/oauth.ts). */
  oauth: OAuthConfig;
  /** The OpenAI-compatible relay's limits (config/relay.ts). */
  relay: RelayConfig;
  /** Money in by x402 top-up: the switch, treasury, gas wallet key file and amount bounds (config/x402.ts). */
  x402: X402Config;
  /** Money out: the payout wallet and the withdrawal holds (config/payouts.ts). */
  payouts: PayoutsConfig;
  /** Host earnings: how long a charge is pending before it is payable (config/earnings.ts). */
  earnings: EarningsConfig;
  /** Signed webhooks: private endpoints, attempt timeout, when a failing endpoint is disabled (config/webhooks.ts). */
  webhooks: WebhooksConfig;
  /** Machine reliability: the floor, the window, the history a machine needs, the worker's period (config/reliability.ts). */
  reliability: ReliabilityConfig;
  /** Verified readiness: the SSH and engine checks before a job runs, their timeouts and cap (config/readiness.ts). */
  readiness: ReadinessConfig;
  /** Hardware self-tests: the benchmark image by digest, the run's bound, the daily interval (config/selftest.ts). */
  selftest: SelftestConfig;
  /** The treasury and its reconciliation with the ledger: address, Multicall3, the worker's period (config/treasury.ts). */
  treasury: TreasuryConfig;
  /** Fault injection, a test facility: off unless ARK_FAULT_EXIT_AT is set, refused in production (faults.ts). */
  faults: FaultsConfig;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function secretKeyFrom(env: Env, dataDir: string, usingPostgres: boolean): Buffer {
  const raw = env.ARK_SECRET_KEY;
  if (raw) {
    const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
    if (key.length !== 32) throw new ConfigError('ARK_SECRET_KEY must be 32 bytes, as 64 hex characters or base64');
    return key;
  }
  if (usingPostgres && env.NODE_ENV === 'production') {
    throw new ConfigError('ARK_SECRET_KEY is required with DATABASE_URL in production: every replica must share it');
  }
  // Embedded deployments keep a generated key beside the database, readable by the owner only.
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex'), { mode: 0o600 });
  chmodSync(file, 0o600);
  return key;
}

/** What loadConfig reads besides the environment: whether stdout is a terminal (for ARK_LOG_FORMAT=auto). */
export interface LoadConfigOptions {
  stdoutIsTerminal?: boolean;
}

export function loadConfig(env: Env = process.env, { stdoutIsTerminal = false }: LoadConfigOptions = {}): Config {
  const host = env.HOST || '127.0.0.1';
  const port = int(env, 'PORT', 8080, 0, 65535);
  const dataDir = resolve(env.ARK_DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// URL (leave it unset for the embedded SQLite store)');
  }
  const synchronous = (env.ARK_SQLITE_SYNCHRONOUS || 'FULL').toUpperCase();
  const httpRequestTimeoutMs = int(env, 'ARK_HTTP_REQUEST_TIMEOUT_S', 60, 1, 3600) * 1000;
  const httpHeadersTimeoutMs = int(env, 'ARK_HTTP_HEADERS_TIMEOUT_S', 15, 1, 3600) * 1000;
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs) {
    throw new ConfigError(
      'ARK_HTTP_HEADERS_TIMEOUT_S must not be longer than ARK_HTTP_REQUEST_TIMEOUT_S (the headers are part of the request)',
    );
  }
  const metricsPort = env.ARK_METRICS_PORT ? int(env, 'ARK_METRICS_PORT', 0, 0, 65535) : null;
  const payments = paymentsConfigFrom(env, (message) => new ConfigError(message));
  if (metricsPort !== null && metricsPort !== 0 && metricsPort === port && (env.ARK_METRICS_HOST || host) === host) {
    throw new ConfigError('ARK_METRICS_PORT must differ from PORT: the metrics listener is a second one');
  }
  if (env.ARK_METRICS_HOST && metricsPort === null) throw new ConfigError('ARK_METRICS_HOST needs ARK_METRICS_PORT');
  const metricsToken = env.ARK_METRICS_TOKEN || null;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,512}$/.test(metricsToken)) {
    throw new ConfigError('ARK_METRICS_TOKEN must be 16 to 512 printable characters without spaces');
  }
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL') throw new ConfigError('ARK_SQLITE_SYNCHRONOUS must be FULL or NORMAL');
  // auto: readable lines on a terminal, JSON everywhere else (a service manager, a container, a pipe).
  const logFormatSetting = (env.ARK_LOG_FORMAT || 'auto').toLowerCase();
  if (!['auto', 'pretty', 'json'].includes(logFormatSetting)) throw new ConfigError('ARK_LOG_FORMAT must be auto, pretty or json');
  const logFormat = logFormatSetting === 'auto' ? (stdoutIsTerminal ? 'pretty' : 'json') : (logFormatSetting as 'pretty' | 'json');
  const replicaUrl = env.ARK_REPLICA_URL ? env.ARK_REPLICA_URL.replace(/\/$/, '') : null;
  if (replicaUrl !== null) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(replicaUrl);
    } catch {}
    if (
      parsed === null ||
      (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
      parsed.pathname !== '/' ||
      parsed.search !== ''
    ) {
      throw new ConfigError('ARK_REPLICA_URL must be an http(s) origin other replicas reach this one at, like http://10.0.0.5:8080');
    }
  }
  const publicBaseUrl = (env.ARK_PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/$/, '');
  return {
    host,
    port,
    dataDir,
    databaseUrl,
    secretKey: secretKeyFrom(env, dataDir, databaseUrl !== null),
    publicBaseUrl,
    replicaUrl,
    redisUrl: env.REDIS_URL || null,
    smtp: { url: env.SMTP_URL || null, from: env.SMTP_FROM || 'Ark <no-reply@ark.invalid>' },
    bodyLimitBytes: int(env, 'ARK_BODY_LIMIT_BYTES', 1_048_576, 1024, 64 * 1_048_576),
    sessionTtlMs: int(env, 'ARK_SESSION_TTL_S', 12 * 3600, 60, 30 * 86400) * 1000,
    stepUpTtlMs: int(env, 'ARK_STEP_UP_TTL_S', 600, 30, 86400) * 1000,
    authAttemptsPerMinute: int(env, 'ARK_AUTH_ATTEMPTS_PER_MIN', 10, 1, 10_000),
    emailVerificationTtlMs: int(env, 'ARK_EMAIL_VERIFICATION_TTL_S', 86400, 300, 30 * 86400) * 1000,
    platformFeeBps: int(env, 'ARK_PLATFORM_FEE_BPS', 1000, 0, 10000),
    newHostMachineCap: int(env, 'ARK_NEW_HOST_MACHINE_CAP', 3, 0, 100_000),
    seedRateMicroPerHour: BigInt(int(env, 'ARK_SEED_RATE_MICRO_PER_HOUR', 500_000, 1, 1_000_000_000_000)),
    heartbeatIntervalMs: int(env, 'ARK_HEARTBEAT_INTERVAL_S', 15, 1, 3600) * 1000,
    marketMinSampleSize: int(env, 'ARK_MARKET_MIN_SAMPLE_SIZE', 5, 3, 100_000),
    nettestEndpoint: env.ARK_NETTEST_ENDPOINT ? env.ARK_NETTEST_ENDPOINT.replace(/\/$/, '') : null,
    pairingVerificationUri: env.ARK_PAIRING_VERIFICATION_URI || null,
    logLevel: env.LOG_LEVEL || 'info',
    logFormat,
    sqliteSynchronous: synchronous,
    termsVersion: env.ARK_TERMS_VERSION || '2026-11',
    termsUrl: env.ARK_TERMS_URL || `${publicBaseUrl}/terms`,
    agentChallengeTtlMs: int(env, 'ARK_AGENT_CHALLENGE_TTL_S', 300, 1, 300) * 1000,
    meterIntervalS: int(env, 'ARK_METER_INTERVAL_S', 30, 1, 3600),
    meterSkewMs: int(env, 'ARK_METER_SKEW_MS', 5000, 0, 600_000),
    retrievalWindowS: int(env, 'ARK_RETRIEVAL_WINDOW_S', 3600, 0, 30 * 86400),
    // Default: three heartbeat intervals, the same grace that marks a machine offline.
    jobAgentGraceMs: env.ARK_JOB_AGENT_GRACE_S
      ? int(env, 'ARK_JOB_AGENT_GRACE_S', 45, 1, 86400) * 1000
      : 3 * int(env, 'ARK_HEARTBEAT_INTERVAL_S', 15, 1, 3600) * 1000,
    jobReconcileTimeoutMs: int(env, 'ARK_JOB_RECONCILE_TIMEOUT_S', 600, 1, 7 * 86400) * 1000,
    jobStartTimeoutMs: int(env, 'ARK_JOB_START_TIMEOUT_S', 1800, 10, 7 * 86400) * 1000,
    // 50 USDC an hour: about 90 machines at the seed rate; at most one MicroAmount (an account may lower it to 0).
    spendRateCapMicroPerHour: BigInt(int(env, 'ARK_SPEND_RATE_CAP_MICRO_PER_HOUR', 50_000_000, 1, Number(MICRO_AMOUNT_MAX))),
    jobAccessHost: env.ARK_JOB_ACCESS_HOST || null,
    httpRequestTimeoutMs,
    httpHeadersTimeoutMs,
    httpMaxConnectionsPerAddress: int(env, 'ARK_HTTP_MAX_CONNECTIONS_PER_ADDRESS', 256, 0, 1_000_000),
    proxies: proxiesConfigFrom(env, (message) => new ConfigError(message)),
    metricsHost: env.ARK_METRICS_HOST || host,
    metricsPort,
    metricsToken,
    operations: operationsConfigFrom(env, (message) => new ConfigError(message)),
    oauth: oauthConfigFrom(
      env,
      (name, fallback, min, max) => int(env, name, fallback, min, max),
      (message) => new ConfigError(message),
    ),
    payments,
    relay: relayConfigFrom((name, fallback, min, max) => int(env, name, fallback, min, max)),
    x402: x402ConfigFrom(env, payments.chains, (message) => new ConfigError(message)),
    payouts: payoutsConfigFrom(env, (message) => new ConfigError(message)),
    earnings: earningsConfigFrom((name, fallback, min, max) => int(env, name, fallback, min, max)),
    webhooks: webhooksConfigFrom(
      env,
      (name, fallback, min, max) => int(env, name, fallback, min, max),
      (message) => new ConfigError(message),
    ),
    readiness: readinessConfigFrom(
      env,
      (name, fallback, min, max) => int(env, name, fallback, min, max),
      (message) => new ConfigError(message),
    ),
    reliability: reliabilityConfigFrom(
      env,
      (name, fallback, min, max) => int(env, name, fallback, min, max),
      (message) => new ConfigError(message),
    ),
    selftest: selftestConfigFrom(
      env,
      (name, fallback, min, max) => int(env, name, fallback, min, max),
      (message) => new ConfigError(message),
    ),
    treasury: treasuryConfigFrom(env, (message) => new ConfigError(message)),
    faults: faultsConfigFrom(env, (message) => new ConfigError(message)),
  };
}
