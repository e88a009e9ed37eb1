import { type ChallengeMessage, createKeyExchange, type SessionMacKeys } from '@ark/shared';

// The agent's answer to the control plane's offer of MAC keys (shared/src/channel/session-mac.ts): the challenge
// carries its ephemeral X25519 key when the agent asked (mac=1); the agent derives the connection's keys and sends
// its own key in the signed hello.

export type MacOfferAnswer =
  /** Keys agreed (`kx`: ours, for the hello), or none offered (both null: signatures only). */
  | { ok: true; kx: string | null; keys: SessionMacKeys | null }
  /** The offer is refused: the connection closes with `reason`. */
  | { ok: false; reason: 'unexpected_kx' | 'bad_kx'; detail?: string };

export function answerMacOffer(challenge: ChallengeMessage, machineId: string, asked: boolean): MacOfferAnswer {
  if (challenge.kx === undefined) return { ok: true, kx: null, keys: null };
  // A key this agent did not ask for is a confused or tampered-with control plane.
  if (!asked) return { ok: false, reason: 'unexpected_kx' };
  const exchange = createKeyExchange();
  try {
    const keys = exchange.derive(challenge.kx, { side: 'agent', challenge: challenge.challenge, sid: challenge.sid, machineId });
    return { ok: true, kx: exchange.publicKey, keys };
  } catch (error) {
    return { ok: false, reason: 'bad_kx', detail: (error as Error).message };
  }
}
