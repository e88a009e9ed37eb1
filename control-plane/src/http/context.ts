import type { RelayReach } from '../readiness/engine-models-probe.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { Authenticator } from '../domain/accounts/principal.js';
import type { ChannelHandlers } from '../gateway/handlers.js';
import type { ControlPlaneIdentity } from '../gateway/identity.js';
import type { GatewayInput } from '../gateway/install.js';
import type { Mailer } from '../mail.js';
import type { Services } from '../services/index.js';
import type { PostgresConnector, Store } from '../store/db.js';
import type { ClaimLocks } from './claim-locks.js';
import type { Metrics } from './metrics.js';
import type { Paginator } from './pagination.js';
import type { RateLimiter } from './rate-limit.js';

/** Everything a route may use. Built in main.ts (or a test) and passed down; nothing reads the environment below. */
export interface AppContext {
  config: Config;
  store: Store;
  clock: Clock;
  mailer: Mailer;
  rateLimiter: RateLimiter;
  authenticator: Authenticator;
  metrics: Metrics;
  paginator: Paginator;
  /** The use cases, built once by the composition root and shared with the gateway, workers and CLI. */
  services: Services;
  /** The agent channel's handler table, filled from `services` in one place (gateway/handlers-table.ts). */
  channel: ChannelHandlers;
  /** The control plane's channel key, loaded once (enrollment announces it, the gateway signs with it). */
  channelIdentity: () => Promise<ControlPlaneIdentity>;
}

/**
 * What buildApp is given: every adapter and the services, built by the composition root (runtime.ts) or a test helper,
 * and closed by whoever built them, after the app.
 */
export type AppContextInput = Omit<AppContext, 'paginator' | 'channel' | 'channelIdentity'> & {
  paginator?: Paginator;
  /** Idempotency claims (http/claim-locks.ts): in memory on SQLite, advisory locks shared by replicas on PostgreSQL. */
  claimLocks: ClaimLocks;
  /** The gateway's LISTEN connection for commands other replicas queue (PostgreSQL); null on SQLite. */
  listenConnector: PostgresConnector | null;
  /** An empty registry to fill (tests add their spies to it); a new one when not given. */
  channel?: ChannelHandlers;
  channelIdentity?: () => Promise<ControlPlaneIdentity>;
  /** Agent gateway tunables and machine directory (default: the machines table). */
  gateway?: GatewayInput;
  /**
   * Hands the gateway's relay reach to the readiness verifier's engine probe (readiness/engine-models-probe.ts), once
   * the app has built its gateway; absent where the services were given a fake probe.
   */
  attachRelay?: (reach: RelayReach) => void;
};
