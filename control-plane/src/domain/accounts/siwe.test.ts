import { createSiweMessage, parseSiweMessage } from 'viem/siwe';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { decideStepUp, stepUpMethodOf } from './account.js';
import { challengeMessage, checkSiweMessage, newSiweNonce, recoverSigner, SIWE_CHAIN_ID, siweSiteOf, siweStatement } from './siwe.js';

const site = siweSiteOf('https://ark.example.test')!;
const wallet = privateKeyToAccount(generatePrivateKey());
const issuedAt = new Date('2026-11-24T12:00:00.000Z');
const expiresAt = new Date(issuedAt.getTime() + 300_000);
const terms = { version: '2026-11', url: 'https://ark.example.test/terms' };
const issue = (overrides: Partial<Parameters<typeof challengeMessage>[0]> = {}) =>
  challengeMessage({
    site,
    address: wallet.address,
    purpose: 'register',
    terms,
    nonce: 'AbCdEfGh12345678',
    issuedAt,
    expiresAt,
    ...overrides,
  });
const at = (ms: number) => new Date(issuedAt.getTime() + ms);
/** What every message we issue for this site says, besides its times and statement. */
const ourFields = {
  scheme: 'https',
  domain: 'ark.example.test',
  address: wallet.address,
  uri: 'https://ark.example.test',
  version: '1' as const,
  chainId: 8453,
  nonce: 'AbCdEfGh12345678',
};

describe('the site of ARK_PUBLIC_URL', () => {
  it('takes the authority (host and port) as the domain, the scheme, and the URL as the URI', () => {
    expect(siweSiteOf('https://ark.example.test')).toEqual({
      scheme: 'https',
      domain: 'ark.example.test',
      uri: 'https://ark.example.test',
    });
    expect(siweSiteOf('http://127.0.0.1:8080')).toEqual({ scheme: 'http', domain: '127.0.0.1:8080', uri: 'http://127.0.0.1:8080' });
    expect(siweSiteOf('http://localhost:3000/ark')).toEqual({ scheme: 'http', domain: 'localhost:3000', uri: 'http://localhost:3000/ark' });
  });
  it('is null where EIP-4361 has no room for the host (a bracketed IPv6 literal) or the URL is no URL', () => {
    expect(siweSiteOf('http://[::1]:8080')).toBeNull();
    expect(siweSiteOf('not a url')).toBeNull();
  });
});

describe('issued messages', () => {
  it('are EIP-4361 for our domain, URI and chain 8453, with the nonce, expiry and the terms version in the statement', () => {
    const fields = parseSiweMessage(issue());
    expect(fields).toMatchObject({
      ...ourFields,
      statement: siweStatement('register', terms),
    });
    expect(fields.statement).toContain('terms version 2026-11');
    expect(fields.issuedAt?.toISOString()).toBe(issuedAt.toISOString());
    expect(fields.expirationTime?.toISOString()).toBe(expiresAt.toISOString());
    expect(SIWE_CHAIN_ID).toBe(8453);
  });
  it('say what a step-up signature does, distinct from registration', () => {
    expect(siweStatement('step-up', terms)).not.toBe(siweStatement('register', terms));
    expect(parseSiweMessage(issue({ purpose: 'step-up' })).statement).toContain('step-up');
  });
  it('carry nonces of 32 alphanumeric characters, all different', () => {
    const nonces = new Set(Array.from({ length: 2000 }, () => newSiweNonce()));
    expect(nonces.size).toBe(2000);
    for (const nonce of nonces) expect(nonce).toMatch(/^[A-Za-z0-9]{32}$/);
  });
});

describe('checkSiweMessage', () => {
  it('accepts our own message before its expiry, naming the address and the nonce', () => {
    expect(checkSiweMessage(issue(), { site, now: at(1_000) })).toEqual({ ok: true, address: wallet.address, nonce: 'AbCdEfGh12345678' });
  });
  it('refuses it at and after the expiry', () => {
    expect(checkSiweMessage(issue(), { site, now: at(300_000) })).toEqual({ refused: 'SIWE_CHALLENGE_EXPIRED' });
    expect(checkSiweMessage(issue(), { site, now: at(600_000) })).toEqual({ refused: 'SIWE_CHALLENGE_EXPIRED' });
  });
  const foreign = (fields: Partial<Parameters<typeof createSiweMessage>[0]>) =>
    createSiweMessage({
      ...ourFields,
      issuedAt,
      expirationTime: expiresAt,
      ...fields,
    });
  it('refuses another domain or scheme, another URI and another chain, each by its own code', () => {
    const now = at(1_000);
    expect(checkSiweMessage(foreign({ domain: 'evil.example.test' }), { site, now })).toEqual({ refused: 'SIWE_DOMAIN_MISMATCH' });
    expect(checkSiweMessage(foreign({ domain: 'ark.example.test:8443' }), { site, now })).toEqual({ refused: 'SIWE_DOMAIN_MISMATCH' });
    expect(checkSiweMessage(foreign({ scheme: 'http' }), { site, now })).toEqual({ refused: 'SIWE_DOMAIN_MISMATCH' });
    expect(checkSiweMessage(foreign({ uri: 'https://ark.example.test/other' }), { site, now })).toEqual({ refused: 'SIWE_URI_MISMATCH' });
    expect(checkSiweMessage(foreign({ chainId: 1 }), { site, now })).toEqual({ refused: 'SIWE_CHAIN_MISMATCH' });
    expect(checkSiweMessage(foreign({}), { site, now })).toMatchObject({ ok: true });
  });
  it('refuses text that is not EIP-4361, and a message without an expiry (we never issue one)', () => {
    const now = at(1_000);
    expect(checkSiweMessage('hello', { site, now })).toEqual({ refused: 'SIWE_MESSAGE_MALFORMED' });
    expect(checkSiweMessage(foreign({ expirationTime: undefined }), { site, now })).toEqual({ refused: 'SIWE_MESSAGE_MALFORMED' });
    expect(checkSiweMessage(issue().replace('Version: 1', 'Version: 2'), { site, now })).toEqual({ refused: 'SIWE_MESSAGE_MALFORMED' });
    // A nonce shorter than EIP-4361's eight characters, which viem's validator refuses.
    expect(checkSiweMessage(foreign({}).replace('Nonce: AbCdEfGh12345678', 'Nonce: abc'), { site, now })).toEqual({
      refused: 'SIWE_MESSAGE_MALFORMED',
    });
    // Not before a time still to come.
    expect(checkSiweMessage(foreign({ notBefore: at(60_000) }), { site, now })).toEqual({ refused: 'SIWE_MESSAGE_MALFORMED' });
  });
});

describe('recoverSigner', () => {
  it('recovers the EIP-191 signer, and answers null for a signature that is no signature', async () => {
    const message = issue();
    const signature = await wallet.signMessage({ message });
    expect(await recoverSigner(message, signature)).toBe(wallet.address);
    expect(await recoverSigner(`${message} `, signature)).not.toBe(wallet.address);
    const other = privateKeyToAccount(generatePrivateKey());
    expect(await recoverSigner(message, await other.signMessage({ message }))).toBe(other.address);
    expect(await recoverSigner(message, `0x${'00'.repeat(65)}`)).toBeNull();
  });
});

describe('wallet step-up on the account rules', () => {
  const agent = { totpEnabled: false, hasPassword: false, accountKind: 'agent' as const };
  const human = { totpEnabled: false, hasPassword: true, accountKind: 'human' as const };
  const proof = { message: 'm', signature: '0x00' };
  it('asks an agent account (no password, no TOTP) for its wallet', () => {
    expect(stepUpMethodOf(agent)).toBe('wallet');
    expect(stepUpMethodOf(human)).toBe('password');
  });
  it('takes a wallet proof only from an agent account, and tells an agent that a password is not its proof', () => {
    expect(decideStepUp(agent, { wallet: proof })).toEqual({ method: 'wallet', proof });
    expect(decideStepUp(human, { wallet: proof })).toEqual({ refused: 'STEP_UP_WALLET_NOT_LINKED' });
    expect(decideStepUp(agent, { password: 'x' })).toEqual({ refused: 'STEP_UP_WALLET_REQUIRED' });
    expect(decideStepUp(agent, { totp_code: '123456' })).toEqual({ refused: 'TOTP_NOT_ENROLLED' });
  });
});
