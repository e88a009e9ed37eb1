import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import type { PostgresConnector, Store } from '../store/db.js';
import { machinesTableDirectory } from './directory.js';
import type { ChannelHandlers, MachineDirectory } from './handlers.js';
import type { ControlPlaneIdentity } from './identity.js';
import { ChannelGateway, type GatewaySettings } from './server.js';

/** What buildApp's caller may pass for the gateway: tunables, and a directory other than the machines table. */
export interface GatewayInput extends GatewaySettings {
  directory?: MachineDirectory;
}

/** What the gateway is built from: the composition root's store, clock and registry, the handler table, the key. */
export interface GatewayDeps {
  config: Config;
  store: Store;
  clock: Clock;
  registry: Registry;
  handlers: ChannelHandlers;
  /** The control plane's channel key, loaded once (gateway/identity.ts). */
  identity: () => Promise<ControlPlaneIdentity>;
  /** The LISTEN connection for other replicas' NOTIFY (runtime.ts); null on SQLite. */
  listenConnector: PostgresConnector | null;
}

/**
 * Puts the agent gateway on the app's HTTP server: upgrades on the channel path go to it, it starts on the first
 * one (so apps that are only injected into hold no LISTEN connection or timers), and it closes before the server.
 * Returns the gateway (tests look at its connections).
 */
export function installChannelGateway(app: FastifyInstance, deps: GatewayDeps, input: GatewayInput = {}): ChannelGateway {
  const { directory, ...settings } = input;
  const gateway = new ChannelGateway({
    store: deps.store,
    handlers: deps.handlers,
    directory: directory ?? machinesTableDirectory(deps.store),
    identity: deps.identity,
    clock: deps.clock,
    logger: app.log.child({ component: 'agent-gateway' }),
    registry: deps.registry,
    // The interval agents are told in welcome is the one liveness and job grace are judged by.
    heartbeatIntervalS: Math.max(1, Math.round(deps.config.heartbeatIntervalMs / 1000)),
    ...settings,
    listenConnector: deps.listenConnector,
  });
  gateway.attach(app.server);
  app.addHook('preClose', async () => {
    await gateway.close();
  });
  return gateway;
}
