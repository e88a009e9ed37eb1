import { randomBytes } from 'node:crypto';
import { getAddress, isAddress, recoverMessageAddress } from 'viem';
import { createSiweMessage, parseSiweMessage, validateSiweMessage } from 'viem/siwe';
import { PRIMARY_CHAIN_ID } from '../payments/chains.js';

// Sign-In with Ethereum (EIP-4361) for agent registration and wallet step-up: the messages we issue and the checks
// on a message that comes back. Pure: the caller gives the clock reading; the store decides "issued, unused".

/** Contract part 8: a registration challenge lives five minutes and is used once. Step-up challenges live as long. */
export const SIWE_CHALLENGE_TTL_MS_MAX = 5 * 60_000;
/** Every proof is for the primary network (Base), whatever other networks are watched. */
export const SIWE_CHAIN_ID = PRIMARY_CHAIN_ID;

export type SiwePurpose = 'register' | 'step-up';

/** Where our messages point: the public URL's authority and scheme, and the URL itself as the URI. */
export interface SiweSite {
  scheme: string;
  /** RFC 3986 authority (host and port) of ARK_PUBLIC_URL. */
  domain: string;
  uri: string;
}

/**
 * The site of ARK_PUBLIC_URL, or null when its host cannot appear in an EIP-4361 message (viem accepts DNS names,
 * IPv4 and localhost, not a bracketed IPv6 literal): such a deploy cannot offer wallet sign-in.
 */
export function siweSiteOf(publicBaseUrl: string): SiweSite | null {
  let url: URL;
  try {
    url = new URL(publicBaseUrl);
  } catch {
    return null;
  }
  const site = { scheme: url.protocol.replace(/:$/, ''), domain: url.host, uri: publicBaseUrl };
  try {
    // A trial build: the same validation the real messages go through.
    createSiweMessage({
      address: '0x0000000000000000000000000000000000000001',
      chainId: SIWE_CHAIN_ID,
      domain: site.domain,
      nonce: 'trialnonce',
      uri: site.uri,
      version: '1',
      scheme: site.scheme,
    });
  } catch {
    return null;
  }
  return site;
}

/**
 * A nonce for one challenge: 32 alphanumeric characters from the OS's CSPRNG (190 bits). viem's generateSiweNonce
 * is not used: it draws from Math.random, and consecutive nonces overlap in 95 of their 96 characters.
 */
export function newSiweNonce(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let nonce = '';
  // 248 is the largest multiple of 62 below 256: rejecting bytes above it keeps every character equally likely.
  while (nonce.length < 32) {
    for (const byte of randomBytes(48)) {
      if (byte < 248 && nonce.length < 32) nonce += alphabet[byte % 62];
    }
  }
  return nonce;
}

/** The statement a wallet signs: what the signature does and, for registration, the terms it accepts. */
export function siweStatement(purpose: SiwePurpose, terms: { version: string; url: string }): string {
  return purpose === 'register'
    ? `Register or sign in an agent account on Ark. By signing you accept the Ark terms version ${terms.version} (${terms.url}).`
    : `Confirm a sensitive action on your Ark account (step-up). Ark terms version ${terms.version} apply.`;
}

export interface ChallengeInput {
  site: SiweSite;
  address: string;
  purpose: SiwePurpose;
  terms: { version: string; url: string };
  nonce: string;
  issuedAt: Date;
  expiresAt: Date;
}

/** The exact text the wallet must sign; the store keeps it, and only this text is accepted back. */
export function challengeMessage(input: ChallengeInput): string {
  return createSiweMessage({
    scheme: input.site.scheme,
    domain: input.site.domain,
    address: getAddress(input.address),
    statement: siweStatement(input.purpose, input.terms),
    uri: input.site.uri,
    version: '1',
    chainId: SIWE_CHAIN_ID,
    nonce: input.nonce,
    issuedAt: input.issuedAt,
    expirationTime: input.expiresAt,
  });
}

export type SiweRefusal =
  | 'SIWE_MESSAGE_MALFORMED'
  | 'SIWE_DOMAIN_MISMATCH'
  | 'SIWE_URI_MISMATCH'
  | 'SIWE_CHAIN_MISMATCH'
  | 'SIWE_CHALLENGE_EXPIRED';

export type SiweCheck = { ok: true; address: `0x${string}`; nonce: string } | { refused: SiweRefusal };

/**
 * The checks on a returned message that need no store: well formed, for our domain, URI and chain (viem's
 * validateSiweMessage checks neither the chain nor the URI, so they are compared here), and not past its expiry at
 * `now`. Whether we issued it, unchanged and unused, is the store's question (by the nonce), asked after these.
 */
export function checkSiweMessage(message: string, expected: { site: SiweSite; now: Date }): SiweCheck {
  const fields = parseSiweMessage(message);
  if (
    fields.address === undefined ||
    !isAddress(fields.address, { strict: false }) ||
    fields.nonce === undefined ||
    fields.domain === undefined ||
    fields.uri === undefined ||
    fields.chainId === undefined ||
    fields.version !== '1' ||
    fields.issuedAt === undefined ||
    Number.isNaN(fields.issuedAt.getTime()) ||
    // We always set an expiry; a message without one is not ours.
    fields.expirationTime === undefined ||
    Number.isNaN(fields.expirationTime.getTime())
  ) {
    return { refused: 'SIWE_MESSAGE_MALFORMED' };
  }
  if (fields.domain !== expected.site.domain || (fields.scheme ?? 'https') !== expected.site.scheme) {
    return { refused: 'SIWE_DOMAIN_MISMATCH' };
  }
  if (fields.uri !== expected.site.uri) return { refused: 'SIWE_URI_MISMATCH' };
  if (fields.chainId !== SIWE_CHAIN_ID) return { refused: 'SIWE_CHAIN_MISMATCH' };
  if (expected.now.getTime() >= fields.expirationTime.getTime()) return { refused: 'SIWE_CHALLENGE_EXPIRED' };
  // The rest (nonce syntax, not-before, address) through viem's own validator too, so our reading never drifts from it.
  if (!validateSiweMessage({ message: fields, domain: expected.site.domain, time: expected.now })) {
    return { refused: 'SIWE_MESSAGE_MALFORMED' };
  }
  return { ok: true, address: getAddress(fields.address), nonce: fields.nonce };
}

/** The address whose EIP-191 personal_sign signature of `message` this is; null when it is no valid signature. */
export async function recoverSigner(message: string, signature: `0x${string}`): Promise<`0x${string}` | null> {
  try {
    return getAddress(await recoverMessageAddress({ message, signature }));
  } catch {
    return null;
  }
}
