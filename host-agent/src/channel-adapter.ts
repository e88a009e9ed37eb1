import type { AgentChannel } from './agent.js';
import type { ChannelSettings } from './cli/context.js';

/** Builds the real channel client from the settings `run` gathered. */
export function createChannel(_settings: ChannelSettings): AgentChannel {
  throw new Error('the channel client (host-agent/src/channel) is not available yet');
}
