import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { Logger } from 'pino';
import type { AppContextInput } from './http/context.js';
import { privateKeyToAccount } from 'viem/accounts';
import { type PayoutWallet, readPayoutKey, ViemPayoutWallet } from './chain/payout-wallet.js';
import type { ChainReader, Hex } from './chain/reader.js';
import { ViemChainReader } from './chain/viem-reader.js';
import { ViemWalletCodeReader } from './chain/wallet-code.js';
import type { Clock } from './clock.js';
import type { Config } from './config/index.js';
import { type Faults, faultsOf } from './faults.js';
import { type ControlPlaneIdentity, identityLoader } from './gateway/identity.js';
import { type ClaimLocks, InProcessClaimLocks, PostgresClaimLocks } from './http/claim-locks.js';
import { createMetrics } from './http/metrics.js';
import { ViemX402Chain } from './chain/x402-chain.js';
import { readSettlementKey } from './config/x402.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { logMailer, smtpMailer } from './mail.js';
import { buildOAuthProviders } from './oauth/providers.js';
import { webhookAlertSink } from './services/alerts/sink.js';
import { buildServices, type ServiceDeps, type Services } from './services/index.js';
import type { TreasuryChain } from './services/treasury/index.js';
import type { ChainNetwork } from './domain/payments/chains.js';
import { createAccountAuthenticator } from './store/accounts-authenticator.js';
import { openStore, type PostgresConnector, type Store } from './store/db.js';
import { migrateToLatest } from './store/migrate.js';
import type { WebhookSender } from './services/webhooks/index.js';
import { httpWebhookSender } from './workers/webhooks.js';
import { RelayEngineModelsProbe } from './readiness/engine-models-probe.js';
import { Ssh2HostKeyProbe } from './readiness/ssh-host-key-probe.js';

/** Opens the configured store (SQLite file under the data dir, or Postgres) and migrates it. */
export async function openConfiguredStore(config: Config): Promise<Store> {
  const { mkdirSync } = await import('node:fs');
  if (!config.databaseUrl) mkdirSync(config.dataDir, { recursive: true });
  const store = openStore({
    databaseUrl: config.databaseUrl,
    sqlitePath: join(config.dataDir, 'ark.sqlite'),
    sqliteSynchronous: config.sqliteSynchronous,
  });
  await migrateToLatest(store);
  return store;
}

/**
 * The treasury's chain side: one reader per configured network (with Multicall3 for the holdings read), built once
 * and reused, and the payout wallet's address from its key file (the key itself is dropped at once). Null without
 * ARK_CHAINS. `ark-cp serve` and the `ark-cp treasury` commands both take it from here.
 */
export function treasuryChainOf(config: Config): TreasuryChain | null {
  const networks = config.payments.chains?.networks ?? [];
  if (networks.length === 0) return null;
  const readers = new Map<string, ChainReader>();
  const payoutWalletAddress = config.payouts.keyFile
    ? (privateKeyToAccount(readPayoutKey(config.payouts.keyFile)).address.toLowerCase() as Hex)
    : null;
  return {
    payoutWalletAddress,
    readerFor(network: ChainNetwork): ChainReader {
      let reader = readers.get(network.name);
      if (!reader) {
        reader = new ViemChainReader({
          rpcUrl: network.rpcUrl,
          multicallAddress: config.treasury.multicallAddress,
          multicallBatchCalls: config.treasury.multicallBatchCalls,
        });
        readers.set(network.name, reader);
      }
      return reader;
    },
  };
}

/**
 * The adapters the use cases reach out through, as every process builds them from its configuration (`ark-cp serve`
 * here, one `ark-cp` command in cli/index.ts): the subsystem test's chain reads, the alert sink, the sign-in providers,
 * the treasury's chain side and the readiness verifier's probes (`engineModels` is attached to the app's gateway). The settlement and wallet-code readers are `serve`'s alone (createRuntime).
 */
export function serviceAdapters(
  config: Config,
  clock: Clock,
): Pick<ServiceDeps, 'chainReaderFor' | 'alerts' | 'oauthProviders' | 'treasuryChain' | 'readinessProbes'> & {
  engineModels: RelayEngineModelsProbe;
} {
  const engineModels = new RelayEngineModelsProbe(clock, config.readiness.engineTimeoutMs);
  return {
    chainReaderFor: (network) => new ViemChainReader({ rpcUrl: network.rpcUrl, timeoutMs: 5_000 }),
    alerts: webhookAlertSink({ url: config.operations.alertWebhookUrl, clock }),
    // Built once: Google's discovery document is cached in its client.
    oauthProviders: buildOAuthProviders(config.oauth),
    treasuryChain: treasuryChainOf(config),
    // Verified readiness: an SSH handshake with each job's endpoint, and a model job's engine through the relay (the
    // gateway's tunnel, attached by the app: createRuntime's attachRelay).
    readinessProbes: {
      ssh: new Ssh2HostKeyProbe(clock, {
        connectTimeoutMs: config.readiness.connectTimeoutMs,
        handshakeTimeoutMs: config.readiness.handshakeTimeoutMs,
      }),
      engine: engineModels,
    },
    engineModels,
  };
}

/** What replicas over one PostgreSQL database share besides the store, each on a dedicated connection of its own. */
export interface ReplicaAdapters {
  /** Idempotency claims: session advisory locks (a twin on another replica is caught), or in memory on SQLite. */
  claimLocks: ClaimLocks;
  /** The gateway's LISTEN connection, which NOTIFY from other replicas wakes; null on SQLite (one process). */
  listenConnector: PostgresConnector | null;
}

/**
 * The replica adapters over `store` (`databaseUrl` is its PostgreSQL URL; null or SQLite: in process only). The
 * connections are opened when first needed (a claim, the gateway's first agent), and again after each loss; whoever
 * builds them closes `claimLocks` after the app.
 */
export function replicaAdapters(store: Store, databaseUrl: string | null): ReplicaAdapters {
  if (store.dialect !== 'postgres' || !databaseUrl) return { claimLocks: new InProcessClaimLocks(), listenConnector: null };
  const connector =
    (connectionTimeoutMillis: number): PostgresConnector =>
    () =>
      new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis });
  return { claimLocks: new PostgresClaimLocks(connector(5_000)), listenConnector: connector(10_000) };
}

/** The payout wallet on the primary network (ARK_PAYOUT_KEY_FILE); null when either is not configured (requests wait). */
export function payoutWalletOf(config: Config): PayoutWallet | null {
  const rpcUrl = config.payments.chains?.networks[0]?.rpcUrl ?? null;
  if (config.payouts.keyFile === null || rpcUrl === null) return null;
  return new ViemPayoutWallet({ rpcUrl, privateKey: readPayoutKey(config.payouts.keyFile) });
}

/** What createRuntime builds: the real adapters, and the services built once over them. */
export type Runtime = AppContextInput & {
  services: Services;
  channelIdentity: () => Promise<ControlPlaneIdentity>;
  /** The deposit watchers' reader of each network in ARK_CHAINS. */
  depositReaderFor: (network: ChainNetwork) => ChainReader;
  /** The payer's wallet (payoutWalletOf); null: nothing is paid, requests wait. */
  payoutWallet: PayoutWallet | null;
  /** The webhook delivery worker's HTTP client. */
  webhookSender: WebhookSender;
  /** The fault points' seam (faults.ts): a test facility, nothing unless ARK_FAULT_EXIT_AT is set. */
  faults: Faults;
  /** After the app closed: flushes the services, then closes the adapters. */
  close(): Promise<void>;
};

/**
 * The composition root's adapters: every real one the server uses (store, rate limiter, mailer, chain clients, the
 * replicas' dedicated PostgreSQL connections, the payout wallet), built once here, and the services every edge
 * (routes, gateway, workers) shares, all on the one clock main.ts built. Nothing below builds or defaults an adapter.
 */
export async function createRuntime(config: Config, logger: Logger, clock: Clock): Promise<Runtime> {
  const store = await openConfiguredStore(config);
  const rateLimiter: RateLimiter = config.redisUrl
    ? new RedisRateLimiter(new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }))
    : new MemoryRateLimiter();
  const mailer = config.smtp.url ? smtpMailer(config.smtp.url, config.smtp.from) : logMailer((line) => logger.info(line));
  const authenticator = createAccountAuthenticator(store);
  const replicas = replicaAdapters(store, config.databaseUrl);
  // The x402 settlement side on the primary network, with the gas wallet's key read from its file (never logged).
  const primary402 = config.x402.enabled ? config.payments.chains?.networks[0] : undefined;
  const x402Chain =
    primary402 && config.x402.settlementKeyFile
      ? new ViemX402Chain({
          rpcUrl: primary402.rpcUrl,
          chainId: primary402.chainId,
          settlementKey: readSettlementKey(config.x402.settlementKeyFile),
        })
      : null;
  // Agent registration reads contract code on the primary network (the first of ARK_CHAINS); none without it.
  const primary = config.payments.chains?.networks[0];
  const walletCode = primary ? new ViemWalletCodeReader({ rpcUrl: primary.rpcUrl, chainId: primary.chainId }) : null;
  const { engineModels, ...adapters } = serviceAdapters(config, clock);
  const faults = faultsOf(config.faults);
  const services = buildServices({ store, clock, config, mailer, logger, ...adapters, x402Chain, walletCode, faults });
  return {
    config,
    store,
    clock,
    mailer,
    rateLimiter,
    authenticator,
    metrics: createMetrics(),
    ...replicas,
    services,
    attachRelay: (reach) => engineModels.attach(reach),
    channelIdentity: identityLoader(store, config.secretKey),
    depositReaderFor: (network) => new ViemChainReader({ rpcUrl: network.rpcUrl }),
    payoutWallet: payoutWalletOf(config),
    webhookSender: httpWebhookSender,
    faults,
    async close() {
      await services.close().catch((error: unknown) => logger.error({ err: error }, 'heartbeat flush on close failed'));
      await replicas.claimLocks.close();
      authenticator.close();
      await rateLimiter.close();
      await store.close();
    },
  };
}
