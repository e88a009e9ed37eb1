import type { Clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import { serviceAdapters } from '../../runtime.js';
import { buildServices } from '../../services/index.js';
import { openStore } from '../../store/db.js';
import { fakeReadinessProbes } from '../../testing/readiness.js';
import { GroupApplier } from '../applier.js';
import { fillChannelHandlers } from '../handlers-table.js';
import { ChannelHandlers } from '../handlers.js';

/** One replica's apply side: its own pool on the shared database, the real handler table and the gateway's applier. */
export interface ApplyingReplica {
  applier: GroupApplier;
  close(): Promise<void>;
}

/**
 * What a control-plane replica runs for reliable agent messages, without its HTTP side: a store of its own over the
 * shared PostgreSQL database (`config.databaseUrl`), the services and the channel's handler table built from them,
 * and the gateway's GroupApplier. Tests and benches stand several of them side by side (replicas writing together)
 * or in a child process they kill -9. `config.secretKey` must be the one the jobs were sealed under.
 */
export function applyingReplica(config: Config, clock: Clock): ApplyingReplica {
  if (!config.databaseUrl) throw new Error('an applying replica runs on PostgreSQL');
  const store = openStore({ databaseUrl: config.databaseUrl, sqlitePath: '', sqliteSynchronous: 'FULL' });
  const services = buildServices({
    store,
    clock,
    config,
    mailer: { async send() {} },
    ...serviceAdapters(config, clock),
    readinessProbes: fakeReadinessProbes(clock),
    x402Chain: null,
    walletCode: null,
  });
  const handlers = fillChannelHandlers(new ChannelHandlers(), services);
  const applier = new GroupApplier({ store, handlers, clock });
  return {
    applier,
    async close() {
      await applier.idle();
      await services.close();
      await store.close();
    },
  };
}
