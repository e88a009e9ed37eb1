import { agentReplicaOf, forgetAgentReplica, recordAgentReplica } from '../../store/agent-replicas.js';
import type { HostingDeps } from './deps.js';

// Which replica holds each agent's channel, so that the relay on any replica reaches the machine's engine
// (http/routes/relay.ts forwards to the holder). With one replica (no ARK_REPLICA_URL) nothing is recorded.

export interface AgentReplicas {
  /** The channel-connect hook: this replica now holds the machine's channel. */
  connected(machineId: string, now: Date): Promise<void>;
  /** The channel-disconnect hook: the channel this replica held ended. */
  disconnected(machineId: string): Promise<void>;
  /** Another replica's address when it holds the machine's channel; null when this one does, or none does. */
  elsewhere(machineId: string): Promise<string | null>;
}

export function agentReplicas(deps: Pick<HostingDeps, 'store' | 'settings'>): AgentReplicas {
  const self = deps.settings.replicaUrl;
  return {
    connected: async (machineId, now) => {
      if (self !== null) await recordAgentReplica(deps.store.db, machineId, self, now);
    },
    disconnected: async (machineId) => {
      if (self !== null) await forgetAgentReplica(deps.store.db, machineId, self);
    },
    elsewhere: async (machineId) => {
      if (self === null) return null;
      const holder = await agentReplicaOf(deps.store.db, machineId);
      return holder !== null && holder !== self ? holder : null;
    },
  };
}
