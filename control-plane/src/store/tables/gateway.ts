/** Small process-wide key/value settings shared by every replica (the control plane's channel key pair lives here). */
export interface SettingsTable {
  key: string;
  value: string;
  updated_at: string;
}

/** Commands for agents, queued in the caller's transaction and delivered by whichever replica holds the socket. */
export interface AgentOutboxTable {
  machine_id: string;
  /** Per machine, from 1, gapless: allocated from agent_channel_state.last_command_seq in the same transaction. */
  command_seq: bigint;
  command_id: string;
  kind: string;
  /** JSON of the command body. */
  body: string;
  created_at: string;
  /** Set once the agent acknowledged this command (cumulatively); null while pending. */
  acked_at: string | null;
}

/** Per machine: what the control plane has applied from the agent and what the agent has applied from it. */
export interface AgentChannelStateTable {
  machine_id: string;
  /** Highest reliable agent message id applied (in the same transaction as its effect). */
  last_applied_msg_id: bigint;
  /** Highest command_seq the agent acknowledged. */
  commands_acked_upto: bigint;
  /** Highest command_seq allocated in the outbox. */
  last_command_seq: bigint;
  updated_at: string;
}

/** The replica holding each agent's channel now (written at the handshake, removed when that channel ends). */
export interface AgentReplicasTable {
  machine_id: string;
  replica_url: string;
  connected_at: string;
}

export interface GatewayTables {
  agent_replicas: AgentReplicasTable;
  settings: SettingsTable;
  agent_outbox: AgentOutboxTable;
  agent_channel_state: AgentChannelStateTable;
}
