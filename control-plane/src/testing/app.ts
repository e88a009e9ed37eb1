import { randomBytes, randomUUID } from 'node:crypto';
import type { ApiKeyScope } from '@ark/shared';
import type { FastifyBaseLogger } from 'fastify';
import { assembleApp } from '../app.js';
import type { AppContext } from '../http/context.js';
import { type Clock, ManualClock } from '../clock.js';
import { type Config, loadConfig } from '../config/index.js';
import { normalizeEmail } from '../domain/accounts/account.js';
import { hashPassword } from '../domain/accounts/password.js';
import { SecretBox, totpContext } from '../domain/accounts/secret-box.js';
import { newTotpSecret, totpCodeAt } from '../domain/accounts/totp.js';
import { createMetrics } from '../http/metrics.js';
import { Paginator } from '../http/pagination.js';
import type { Role } from '../domain/accounts/principal.js';
import { MemoryRateLimiter } from '../http/rate-limit.js';
import type { TypedApp } from '../http/typed-app.js';
import type { MailMessage, Mailer } from '../mail.js';
import { replicaAdapters, serviceAdapters } from '../runtime.js';
import { buildServices } from '../services/index.js';
import type { ReadinessProbes } from '../services/jobs/index.js';
import { fakeReadinessProbes } from './readiness.js';
import { agentPlaceholderEmail } from '../services/accounts/agent-registration.js';
import { insertAccount } from '../store/accounts.js';
import { insertWallet } from '../store/agent-wallets.js';
import { createAccountAuthenticator } from '../store/accounts-authenticator.js';
import { issueApiKey, issueSession } from '../services/accounts/credentials.js';
import { recordStepUp } from '../store/accounts-credentials.js';
import type { Dialect } from '../store/db.js';
import { createTestStore, type TestStore } from './stores.js';

export interface TestAppOptions<C extends Clock> {
  /** Defaults to a ManualClock at 2026-01-01T00:00:00Z: advance it instead of sleeping. */
  clock?: C;
  /** Defaults to an in-memory outbox (`outbox` in the result). */
  mailer?: Mailer;
  configOverrides?: Partial<Config>;
  /** Routes a test needs beside the real ones (e.g. a probe with a given `config.auth`), added before ready. */
  extraRoutes?: (app: TypedApp, ctx: AppContext) => void;
  /** The app's logger, as main.ts passes its own (default none: nothing is logged). */
  logger?: FastifyBaseLogger;
  /** The readiness verifier's probes (default: fakes that verify every reported endpoint, testing/readiness.ts). */
  readinessProbes?: ReadinessProbes;
}

export interface TestApp<C extends Clock> {
  app: TypedApp;
  ctx: AppContext;
  store: TestStore;
  clock: C;
  /** Mail sent through the default in-memory mailer, oldest first. */
  outbox: MailMessage[];
  /** Closes the app and drops the store. */
  destroy(): Promise<void>;
}

/** A test config: a random secret key, nothing read from the environment. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  const base = loadConfig({ ARK_SECRET_KEY: randomBytes(32).toString('hex'), ARK_DATA_DIR: '/nonexistent/ark-test', LOG_LEVEL: 'silent' });
  return { ...base, ...overrides };
}

/**
 * The real app over a fresh store of `dialect`, with the real authenticator, an in-memory rate limiter and a
 * capturing mailer. Every area's route tests start here.
 */
export async function createTestApp<C extends Clock = ManualClock>(dialect: Dialect, options: TestAppOptions<C> = {}): Promise<TestApp<C>> {
  const store = await createTestStore(dialect);
  const clock = (options.clock ?? new ManualClock()) as C;
  const outbox: MailMessage[] = [];
  const mailer: Mailer = options.mailer ?? {
    async send(message) {
      outbox.push(message);
    },
  };
  const config = testConfig({ databaseUrl: dialect === 'postgres' ? store.location : null, ...options.configOverrides });
  const rateLimiter = new MemoryRateLimiter();
  const authenticator = createAccountAuthenticator(store);
  // The adapters `ark-cp serve` builds from this configuration (none reaches outside loopback with a test config), no
  // settlement side or wallet-code reader; on PostgreSQL the replicas' claim locks and LISTEN connection, as in production.
  const services = buildServices({
    store,
    clock,
    config,
    mailer,
    logger: options.logger,
    ...serviceAdapters(config, clock),
    // No agent runs an SSH server here: readiness is verified by fakes unless the test gives its own probes.
    readinessProbes: options.readinessProbes ?? fakeReadinessProbes(clock),
    x402Chain: null,
    walletCode: null,
  });
  const replicas = replicaAdapters(store, config.databaseUrl);
  // The app fills the channel's handler table from the services.
  const { app, ctx } = await assembleApp(
    {
      config,
      store,
      clock,
      mailer,
      rateLimiter,
      authenticator,
      metrics: createMetrics(),
      paginator: new Paginator(config.secretKey),
      services,
      ...replicas,
    },
    options.logger ? { logger: options.logger } : {},
  );
  options.extraRoutes?.(app, ctx);
  await app.ready();
  return {
    app,
    ctx,
    store,
    clock,
    outbox,
    async destroy() {
      // The app first: its gateway closes the agent connections, so nothing is buffered after the services' flush.
      await app.close();
      await services.close().catch((error: unknown) => options.logger?.error({ err: error }, 'heartbeat flush on close failed'));
      await replicas.claimLocks.close();
      authenticator.close();
      await rateLimiter.close();
      await store.destroy();
    },
  };
}

export interface SeedOptions {
  role?: Role;
  /** Scopes of the seeded API key (default both). */
  scopes?: ApiKeyScope[];
  /** Default true. */
  verified?: boolean;
  /** Enroll TOTP (the seed is returned so the test can compute codes). */
  withTotp?: boolean;
  /**
   * Record a fresh step-up (method: totp when withTotp, else password) on the session. Not on the key: a key's
   * password or TOTP step-up never counts (stepUpCounts); seedAgent gives keys a wallet step-up.
   */
  stepUp?: boolean;
  email?: string;
  password?: string;
  name?: string | null;
}

export interface SeededAccount {
  accountId: string;
  email: string;
  password: string;
  sessionToken: string;
  sessionId: string;
  apiKey: string;
  apiKeyId: string;
  /** Base32 TOTP seed when seeded withTotp. */
  totpSecret: string | null;
}

/** A ready account with a session and an API key, straight into the store (fast; no HTTP, no mail). */
export async function seedAccount(ctx: AppContext, options: SeedOptions = {}): Promise<SeededAccount> {
  const now = ctx.clock.now();
  const email = normalizeEmail(options.email ?? `user-${randomUUID()}@example.test`);
  const password = options.password ?? `pw-${randomBytes(12).toString('base64url')}`;
  const passwordHash = await hashPassword(password);
  const totpSecret = options.withTotp ? newTotpSecret() : null;
  return ctx.store.db.transaction().execute(async (trx) => {
    const account = await insertAccount(trx, {
      email,
      passwordHash,
      name: options.name ?? null,
      role: options.role ?? 'renter',
      emailVerified: options.verified ?? true,
      now,
    });
    if (totpSecret) {
      const sealed = new SecretBox(ctx.config.secretKey).seal(totpSecret, totpContext(account.id));
      // The seeded code step is one before now, so the first code a test computes is still accepted.
      const step = BigInt(Math.floor(now.getTime() / 30_000) - 2);
      await trx.updateTable('accounts').set({ totp_secret_sealed: sealed, totp_last_step: step }).where('id', '=', account.id).execute();
    }
    const session = await issueSession(trx, account.id, now, ctx.config.sessionTtlMs);
    const key = await issueApiKey(trx, {
      accountId: account.id,
      label: 'seed',
      scopes: options.scopes ?? ['renter', 'host'],
      expiresAt: null,
      now,
    });
    if (options.stepUp) {
      const until = new Date(now.getTime() + ctx.config.stepUpTtlMs);
      const method = totpSecret ? 'totp' : 'password';
      await recordStepUp(trx, { kind: 'session', id: session.row.id }, method, until);
    }
    return {
      accountId: account.id,
      email,
      password,
      sessionToken: session.token,
      sessionId: session.row.id,
      apiKey: key.secret,
      apiKeyId: key.row.id,
      totpSecret,
    };
  });
}

export interface SeededAgent {
  accountId: string;
  /** The sign-in wallet's address. */
  walletAddress: string;
  /** One key per scope set asked for, in order. */
  apiKeys: string[];
}

export interface SeedAgentOptions {
  /** The scopes of each key (default one renter key, as registration issues). */
  keys?: ApiKeyScope[][];
  /** The sign-in wallet (default a random address, whose key nobody has). */
  walletAddress?: string;
  /** Record a fresh wallet step-up on every key, as a signed step-up challenge would (default true). */
  stepUp?: boolean;
}

/**
 * An agent account as wallet registration makes it (no password, a placeholder email, role renter, a sign-in
 * wallet), straight into the store, with its keys.
 */
export async function seedAgent(ctx: AppContext, options: SeedAgentOptions = {}): Promise<SeededAgent> {
  const now = ctx.clock.now();
  const id = randomUUID();
  const walletAddress = options.walletAddress ?? `0x${randomBytes(20).toString('hex')}`;
  return ctx.store.db.transaction().execute(async (trx) => {
    await insertAccount(trx, {
      id,
      email: agentPlaceholderEmail(id),
      passwordHash: null,
      name: 'seeded agent',
      role: 'renter',
      accountKind: 'agent',
      emailVerified: false,
      now,
    });
    await insertWallet(trx, {
      accountId: id,
      address: walletAddress,
      profile: { name: 'seeded agent', vendor: 'test', model: 'test' },
      now,
    });
    const apiKeys: string[] = [];
    for (const scopes of options.keys ?? [['renter']]) {
      const key = await issueApiKey(trx, { accountId: id, label: 'seed', scopes, expiresAt: null, now });
      if (options.stepUp ?? true) {
        await recordStepUp(trx, { kind: 'api-key', id: key.row.id }, 'wallet', new Date(now.getTime() + ctx.config.stepUpTtlMs));
      }
      apiKeys.push(key.secret);
    }
    return { accountId: id, walletAddress, apiKeys };
  });
}

/** The code an authenticator app would show for `secret` at the clock's time. */
export function totpCode(secret: string, clock: Clock): string {
  return totpCodeAt(secret, clock.now());
}

export const bearer = (token: string): { authorization: string } => ({ authorization: `Bearer ${token}` });
