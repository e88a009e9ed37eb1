import type { AgentChannel } from './agent-ports.js';
import { ChannelClient } from './channel/client.js';
import type { ChannelSettings } from './cli/context.js';

/** Builds the real channel client from the settings `run` gathered. */
export function createChannel(settings: ChannelSettings): AgentChannel {
  return new ChannelClient(settings);
}
