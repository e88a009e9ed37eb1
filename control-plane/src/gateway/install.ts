import type { FastifyInstance } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Metrics } from '../http/metrics.js';
import type { Store } from '../store/db.js';
import { machineDirectory } from '../store/machines.js';
import type { ChannelHandlers, MachineDirectory } from './handlers.js';
import { loadControlPlaneIdentity } from './identity.js';
import { ChannelGateway, type GatewaySettings } from './server.js';

/** What buildApp's caller may pass for the gateway: tunables, and a directory other than the machines table. */
export interface GatewayInput extends GatewaySettings {
  directory?: MachineDirectory;
}

const gateways = new WeakMap<FastifyInstance, ChannelGateway>();

/** The gateway installed on an app (tests use it to look at connections). */
export function channelGatewayOf(app: FastifyInstance): ChannelGateway | undefined {
  return gateways.get(app);
}

/**
 * Puts the agent gateway on the app's HTTP server: upgrades on the channel path go to it, it starts on the first
 * one (so apps that are only injected into hold no LISTEN connection or timers), and it closes before the server.
 */
export function installChannelGateway(
  app: FastifyInstance,
  ctx: { config: Config; store: Store; clock: Clock; metrics: Metrics; channel: ChannelHandlers },
  input: GatewayInput = {},
): ChannelGateway {
  const { directory, ...settings } = input;
  const gateway = new ChannelGateway({
    store: ctx.store,
    handlers: ctx.channel,
    directory: directory ?? machineDirectory(ctx.store),
    identity: () => loadControlPlaneIdentity(ctx.store, ctx.config.secretKey),
    clock: ctx.clock,
    logger: app.log.child({ component: 'agent-gateway' }),
    registry: ctx.metrics.registry,
    // The interval agents are told in welcome is the one liveness and job grace are judged by.
    heartbeatIntervalS: Math.max(1, Math.round(ctx.config.heartbeatIntervalMs / 1000)),
    ...settings,
    listenUrl: settings.listenUrl !== undefined ? settings.listenUrl : ctx.store.dialect === 'postgres' ? ctx.config.databaseUrl : null,
  });
  gateway.attach(app.server);
  app.addHook('preClose', async () => {
    await gateway.close();
  });
  gateways.set(app, gateway);
  return gateway;
}
