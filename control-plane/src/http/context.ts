import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { Authenticator } from '../domain/accounts/principal.js';
import type { ChannelHandlers } from '../gateway/handlers.js';
import type { ControlPlaneIdentity } from '../gateway/identity.js';
import type { GatewayInput } from '../gateway/install.js';
import type { Mailer } from '../mail.js';
import type { Services } from '../services/index.js';
import type { Store } from '../store/db.js';
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

export type AppContextInput = Omit<AppContext, 'paginator' | 'channel' | 'services' | 'channelIdentity'> & {
  paginator?: Paginator;
  /** Built by buildApp when not given (and then closed with the app); `ark-cp serve` builds them in runtime.ts. */
  services?: Services;
  /** An empty registry to fill (tests add their spies to it); a new one when not given. */
  channel?: ChannelHandlers;
  channelIdentity?: () => Promise<ControlPlaneIdentity>;
  /** Agent gateway tunables and machine directory (default: the machines table). */
  gateway?: GatewayInput;
};
