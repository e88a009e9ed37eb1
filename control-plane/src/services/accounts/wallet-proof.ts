import {
  challengeMessage,
  checkSiweMessage,
  newSiweNonce,
  recoverSigner,
  SIWE_CHALLENGE_TTL_MS_MAX,
  type SiwePurpose,
  type SiweSite,
  siweSiteOf,
} from '../../domain/accounts/siwe.js';
import { DomainError } from '../../errors.js';
import { type AgentChallengeRow, consumeChallenge, findChallenge, insertChallenge, pruneChallenges } from '../../store/agent-challenges.js';
import type { Tx } from '../../store/db.js';
import type { AccountDeps } from './deps.js';

// The two halves every wallet proof shares (registration and step-up): issue a challenge, and check what comes back.

/** Expired challenges are kept this long before pruning, so a late answer still reads "expired", not "not issued". */
const CHALLENGE_KEEP_MS = 3_600_000;

export function siteOf(deps: AccountDeps): SiweSite {
  const site = siweSiteOf(deps.settings.publicBaseUrl);
  if (!site)
    throw new DomainError('SERVICE_UNAVAILABLE', 'Wallet sign-in needs ARK_PUBLIC_URL with a DNS name, IPv4 address or localhost.');
  return site;
}

export interface IssuedChallenge {
  message: string;
  expiresAt: Date;
}

/** Stores and answers a fresh EIP-4361 challenge for `address`: five minutes at most, single use. */
export async function issueChallenge(
  deps: AccountDeps,
  input: { purpose: SiwePurpose; address: string; accountId: string | null },
): Promise<IssuedChallenge> {
  const site = siteOf(deps);
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + Math.min(deps.settings.agentChallengeTtlMs, SIWE_CHALLENGE_TTL_MS_MAX));
  const nonce = newSiweNonce();
  const message = challengeMessage({
    site,
    address: input.address,
    purpose: input.purpose,
    terms: { version: deps.settings.termsVersion, url: deps.settings.termsUrl },
    nonce,
    issuedAt: now,
    expiresAt,
  });
  const row: AgentChallengeRow = {
    nonce,
    purpose: input.purpose,
    address_key: input.address.toLowerCase(),
    account_id: input.accountId,
    message,
    issued_at: now.toISOString(),
    expires_at: expiresAt.toISOString(),
    used_at: null,
  };
  await insertChallenge(deps.store.db, row);
  await pruneChallenges(deps.store.db, new Date(now.getTime() - CHALLENGE_KEEP_MS));
  return { message, expiresAt };
}

export interface CheckedProof {
  challenge: AgentChallengeRow;
  /** The wallet that signed, checksummed: the one the challenge was issued to. */
  address: `0x${string}`;
}

/**
 * Everything short of consuming the challenge: the message is well formed, for our domain, URI and chain, unexpired,
 * exactly one we issued for `purpose` (byte for byte), unused, and signed (EIP-191) by the address it names. Refusals
 * are DomainErrors with the SIWE_* code that says which check failed.
 */
export async function checkProof(
  deps: AccountDeps,
  purpose: SiwePurpose,
  proof: { message: string; signature: string },
): Promise<CheckedProof> {
  const now = deps.clock.now();
  const checked = checkSiweMessage(proof.message, { site: siteOf(deps), now });
  if ('refused' in checked) throw new DomainError(checked.refused);
  const challenge = await findChallenge(deps.store.db, checked.nonce);
  if (!challenge || challenge.purpose !== purpose || challenge.message !== proof.message) throw new DomainError('SIWE_MESSAGE_NOT_ISSUED');
  refuseSpent(challenge, now);
  const signer = await recoverSigner(proof.message, proof.signature as `0x${string}`);
  if (signer === null || signer.toLowerCase() !== challenge.address_key) throw new DomainError('SIWE_SIGNATURE_INVALID');
  return { challenge, address: signer };
}

/** Consumes the checked challenge in the caller's transaction; the loser of a race learns why (used or expired). */
export async function consumeProof(trx: Tx, deps: AccountDeps, proof: CheckedProof): Promise<void> {
  const now = deps.clock.now();
  if (await consumeChallenge(trx, proof.challenge.nonce, now)) return;
  const current = await findChallenge(trx, proof.challenge.nonce);
  if (current) refuseSpent(current, now);
  throw new DomainError('SIWE_CHALLENGE_USED');
}

function refuseSpent(challenge: AgentChallengeRow, now: Date): void {
  if (challenge.used_at !== null) throw new DomainError('SIWE_CHALLENGE_USED');
  if (now.getTime() >= Date.parse(challenge.expires_at)) throw new DomainError('SIWE_CHALLENGE_EXPIRED');
}
