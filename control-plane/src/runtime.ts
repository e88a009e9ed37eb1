import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { AppContextInput } from './http/context.js';
import { privateKeyToAccount } from 'viem/accounts';
import { readPayoutKey } from './chain/payout-wallet.js';
import type { ChainReader, Hex } from './chain/reader.js';
import { ViemChainReader } from './chain/viem-reader.js';
import { ViemWalletCodeReader } from './chain/wallet-code.js';
import type { Clock } from './clock.js';
import type { Config } from './config/index.js';
import { type ControlPlaneIdentity, identityLoader } from './gateway/identity.js';
import { createMetrics } from './http/metrics.js';
import { ViemX402Chain } from './chain/x402-chain.js';
import { readSettlementKey } from './config/x402.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { logMailer, smtpMailer } from './mail.js';
import { buildServices, type Services } from './services/index.js';
import type { TreasuryChain } from './services/treasury/index.js';
import type { ChainNetwork } from './domain/payments/chains.js';
import { createAccountAuthenticator } from './store/accounts-authenticator.js';
import { openStore, type Store } from './store/db.js';
import { migrateToLatest } from './store/migrate.js';

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

/** What createRuntime builds: the real adapters, and the services built once over them. */
export type Runtime = AppContextInput & {
  services: Services;
  channelIdentity: () => Promise<ControlPlaneIdentity>;
  /** After the app closed: flushes the services, then closes the adapters. */
  close(): Promise<void>;
};

/**
 * The real adapters behind every AppContext field, and the services every edge (routes, gateway, workers) shares,
 * all on the one clock main.ts built.
 */
export async function createRuntime(config: Config, logger: Logger, clock: Clock): Promise<Runtime> {
  const store = await openConfiguredStore(config);
  const rateLimiter: RateLimiter = config.redisUrl
    ? new RedisRateLimiter(new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }))
    : new MemoryRateLimiter();
  const mailer = config.smtp.url ? smtpMailer(config.smtp.url, config.smtp.from) : logMailer((line) => logger.info(line));
  const authenticator = createAccountAuthenticator(store);
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
  const services = buildServices({ store, clock, config, mailer, logger, x402Chain, walletCode, treasuryChain: treasuryChainOf(config) });
  return {
    config,
    store,
    clock,
    mailer,
    rateLimiter,
    authenticator,
    metrics: createMetrics(),
    services,
    channelIdentity: identityLoader(store, config.secretKey),
    async close() {
      await services.close().catch((error: unknown) => logger.error({ err: error }, 'heartbeat flush on close failed'));
      authenticator.close();
      await rateLimiter.close();
      await store.close();
    },
  };
}
