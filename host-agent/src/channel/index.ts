export {
  ChannelClient,
  type ChannelClientOptions,
  type ChannelLogger,
  type ChannelState,
  type ChannelStatus,
  type HeartbeatBody,
} from './client.js';
export { PersistentQueue, QueueFullError, type QueuedMessage, type ReliableBody } from './queue.js';
export { nodeSigner, pinnedVerifier } from './signer.js';
export { tweetnaclSigner } from './tweetnacl-signer.js';
