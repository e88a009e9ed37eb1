// AI agents sign up with nothing but a wallet, end to end: the real control plane (`ark-cp serve`) on SQLite and on
// PostgreSQL, a real anvil playing Base for the contract-code check, and fresh viem local accounts signing the
// EIP-4361 challenges as an agent's code would. Driven only through HTTP and the chain.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hex } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { BASE_USDC } from './deposit-helpers.js';
import { api, type ControlPlane, startControlPlane } from './host-side-helpers.js';

/** Challenges live this long here (the default is the contract's five minutes), so the expiry case waits seconds. */
const CHALLENGE_TTL_S = 3;
const agent = { name: 'e2e agent', vendor: 'Example Labs', model: 'example-model-1' };

let anvil: Anvil;
let chainsFile: string;

beforeAll(async () => {
  anvil = await startAnvil();
  chainsFile = join(mkdtempSync(join(tmpdir(), 'ark-agents-chains-')), 'chains.json');
  writeFileSync(
    chainsFile,
    JSON.stringify({
      networks: [{ name: 'base', chain_id: 8453, rpc_url: anvil.url, assets: [{ symbol: 'USDC', address: BASE_USDC, decimals: 6 }] }],
    }),
  );
}, 60_000);

afterAll(async () => {
  await anvil?.stop();
});

describe.each(['sqlite', 'postgres'] as const)('agent registration by wallet on %s', (dialect) => {
  let database: TestDatabase | null = null;
  let cp: ControlPlane;

  beforeAll(async () => {
    if (dialect === 'postgres') database = await createTestDatabase();
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: {
        ARK_CHAINS: chainsFile,
        ARK_SECRET_KEY: randomBytes(32).toString('hex'),
        ARK_AGENT_CHALLENGE_TTL_S: String(CHALLENGE_TTL_S),
        ARK_TERMS_VERSION: '2026-11-e2e',
        ARK_TERMS_URL: 'https://ark.example.test/terms/2026-11-e2e',
        // Every case below asks for challenges from 127.0.0.1; the limit itself is tested in process.
        ARK_AUTH_ATTEMPTS_PER_MIN: '1000',
        ARK_CHAIN_POLL_INTERVAL_MS: '1000',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
    await database?.drop();
  });

  const challenge = async (address: string) => {
    const answer = await api(cp.base, 'POST', '/api/v1/agents/accounts/challenge', { body: { address } });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body as { message: string; expires_at: string; terms_version: string; terms_url: string };
  };
  const register = (message: string, signature: Hex) =>
    api(cp.base, 'POST', '/api/v1/agents/accounts', { body: { message, signature, agent } });
  /** Challenge, sign exactly as returned, register: what an agent's code does. */
  const signUp = async (wallet: PrivateKeyAccount) => {
    const { message } = await challenge(wallet.address);
    const answer = await register(message, await wallet.signMessage({ message }));
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return answer.body as any;
  };
  const refusedWith = (answer: { status: number; body: any }, status: number, code: string) => {
    expect(answer.status, JSON.stringify(answer.body)).toBe(status);
    expect(answer.body.error.code).toBe(code);
  };

  it('registers a fresh wallet as an agent with a working renter key; the same wallet again gets a new key for the same account', async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const before = Date.now();
    const issued = await challenge(wallet.address.toLowerCase());
    const domain = new URL(cp.base).host;
    expect(issued.terms_version).toBe('2026-11-e2e');
    expect(issued.terms_url).toBe('https://ark.example.test/terms/2026-11-e2e');
    expect(issued.message.split('\n').slice(0, 2)).toEqual([
      `http://${domain} wants you to sign in with your Ethereum account:`,
      wallet.address,
    ]);
    expect(issued.message).toContain('terms version 2026-11-e2e');
    expect(issued.message).toContain(`\nURI: ${cp.base}\n`);
    expect(issued.message).toContain('\nChain ID: 8453\n');
    expect(issued.message).toMatch(/\nNonce: [A-Za-z0-9]{32}\n/);
    expect(issued.message).toContain(`\nExpiration Time: ${issued.expires_at}`);
    const ttlMs = Date.parse(issued.expires_at) - before;
    expect(ttlMs).toBeGreaterThan(CHALLENGE_TTL_S * 1000 - 1000);
    expect(ttlMs).toBeLessThanOrEqual(CHALLENGE_TTL_S * 1000 + 1000);

    const answer = await register(issued.message, await wallet.signMessage({ message: issued.message }));
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    const first = answer.body as any;
    expect(first.account_created).toBe(true);
    expect(first.wallet_address).toBe(wallet.address);
    expect(first.agent).toEqual(agent);
    expect(first.account).toMatchObject({
      account_kind: 'agent',
      role: 'renter',
      email_verified: false,
      two_factor_enabled: false,
      host_enabled: false,
      step_up_method: 'wallet',
      auth_method: 'api-key',
      name: agent.name,
    });
    expect(first.account.email).toMatch(/^agent-[0-9a-f-]{36}@agents\.ark\.invalid$/);
    expect(first.api_key.scopes).toEqual(['renter']);
    expect(first.api_key.secret).toMatch(/^ark_[A-Za-z0-9_-]{43}$/);

    const me = await api(cp.base, 'GET', '/api/v1/account', { token: first.api_key.secret });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ ...first.account, auth_method: 'api-key' });
    // Wallet-created counts as verified for renting: a quote for an unknown offer is "no such offer", not EMAIL_NOT_VERIFIED.
    const quote = await api(cp.base, 'POST', '/api/v1/quotes', {
      token: first.api_key.secret,
      idempotent: true,
      body: { offer_id: randomUUID(), gpu_count: 1, duration_limit_s: 3600, image_digest: `busybox@sha256:${'a'.repeat(64)}` },
    });
    refusedWith(quote, 404, 'OFFER_NOT_FOUND');
    const balance = await api(cp.base, 'GET', '/api/v1/billing/balance', { token: first.api_key.secret });
    expect(balance.status).toBe(200);
    // A renter key: hosting needs a verified email and the host scope.
    refusedWith(await api(cp.base, 'POST', '/api/v1/hosts/enrollment-tokens', { token: first.api_key.secret }), 403, 'SCOPE_REQUIRED');

    const again = await signUp(wallet);
    expect(again.account_created).toBe(false);
    expect(again.account.account_id).toBe(first.account.account_id);
    expect(again.api_key.api_key_id).not.toBe(first.api_key.api_key_id);
    expect(again.api_key.secret).not.toBe(first.api_key.secret);
    for (const secret of [first.api_key.secret, again.api_key.secret]) {
      const read = await api(cp.base, 'GET', '/api/v1/account', { token: secret });
      expect((read.body as any).account_id).toBe(first.account.account_id);
    }
    // The secret is shown once: the key list has no secrets.
    const keys = await api(cp.base, 'GET', '/api/v1/account/api-keys', { token: again.api_key.secret });
    expect((keys.body as any).items).toHaveLength(2);
    expect(JSON.stringify(keys.body)).not.toContain(first.api_key.secret.slice(12));

    // A used challenge never works twice.
    refusedWith(await register(issued.message, await wallet.signMessage({ message: issued.message })), 401, 'SIWE_CHALLENGE_USED');
  });

  it('refuses expired, foreign-domain, wrong-chain, wrong-URI and tampered messages and wrong signatures with their codes, creating no account', async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const stranger = privateKeyToAccount(generatePrivateKey());
    const signed = async (message: string, by: PrivateKeyAccount = wallet) => register(message, await by.signMessage({ message }));
    const { message } = await challenge(wallet.address);
    const domain = new URL(cp.base).host;

    refusedWith(await signed(message.replace(`http://${domain} wants`, 'http://evil.example.test wants')), 401, 'SIWE_DOMAIN_MISMATCH');
    refusedWith(await signed(message.replace('\nChain ID: 8453\n', '\nChain ID: 1\n')), 401, 'SIWE_CHAIN_MISMATCH');
    refusedWith(await signed(message.replace(`\nURI: ${cp.base}\n`, `\nURI: ${cp.base}/elsewhere\n`)), 401, 'SIWE_URI_MISMATCH');
    refusedWith(await signed(message.replace('terms version 2026-11-e2e', 'terms version 1999-01')), 401, 'SIWE_MESSAGE_NOT_ISSUED');
    // Our message for this wallet, re-addressed to another wallet that signs it: not what we issued.
    refusedWith(await signed(message.replace(wallet.address, stranger.address), stranger), 401, 'SIWE_MESSAGE_NOT_ISSUED');
    refusedWith(await signed(message, stranger), 401, 'SIWE_SIGNATURE_INVALID');
    refusedWith(await register(message, `0x${'11'.repeat(65)}`), 401, 'SIWE_SIGNATURE_INVALID');
    refusedWith(await register('hello, sign me', await wallet.signMessage({ message: 'hello, sign me' })), 422, 'SIWE_MESSAGE_MALFORMED');

    // None of that made an account, nor spent the challenge: signed as issued, it creates the account now.
    const created = await signed(message);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((created.body as any).account_created).toBe(true);

    const late = privateKeyToAccount(generatePrivateKey());
    const expiring = await challenge(late.address);
    await new Promise((resolve) => setTimeout(resolve, Date.parse(expiring.expires_at) - Date.now() + 200));
    refusedWith(await signed(expiring.message, late), 401, 'SIWE_CHALLENGE_EXPIRED');
    expect((await signUp(late)).account_created).toBe(true);
  }, 30_000);

  it('refuses a wallet with contract code on the primary network', async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    // Deploy a contract (init code returning one byte of runtime code), then place that code at the wallet's address:
    // its signatures are valid, so only the code check can refuse it.
    const deployer = (await anvil.rpc<string[]>('eth_accounts'))[0];
    const hash = await anvil.rpc<Hex>('eth_sendTransaction', [{ from: deployer, data: '0x600160005360016000f3' }]);
    // The node mines the transaction on its own; the receipt can still be a moment behind the hash.
    let receipt: { contractAddress: Hex } | null = null;
    for (let tries = 0; receipt === null && tries < 100; tries++) {
      receipt = await anvil.rpc<{ contractAddress: Hex } | null>('eth_getTransactionReceipt', [hash]);
      if (receipt === null) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (receipt === null) throw new Error(`no receipt for the deployment ${hash} after 5 s`);
    const code = await anvil.rpc<Hex>('eth_getCode', [receipt.contractAddress, 'latest']);
    expect(code).not.toBe('0x');
    await anvil.rpc('anvil_setCode', [wallet.address, code]);

    const { message } = await challenge(wallet.address);
    refusedWith(await register(message, await wallet.signMessage({ message })), 403, 'WALLET_NOT_EOA');

    // The same wallet without code registers, as a new account: the refusal created none.
    await anvil.rpc('anvil_setCode', [wallet.address, '0x']);
    expect((await signUp(wallet)).account_created).toBe(true);
  });

  it('steps up with the sign-in wallet, so the agent can create a key that needs step-up', async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const registered = await signUp(wallet);
    const token = registered.api_key.secret as string;
    const createKey = () =>
      api(cp.base, 'POST', '/api/v1/account/api-keys', { token, idempotent: true, body: { label: 'worker', scopes: ['renter'] } });

    const addWithdrawalAddress = () =>
      api(cp.base, 'POST', '/api/v1/withdrawal-addresses', { token, idempotent: true, body: { address: wallet.address } });
    refusedWith(await createKey(), 403, 'STEP_UP_REQUIRED');
    refusedWith(await addWithdrawalAddress(), 403, 'STEP_UP_REQUIRED');
    refusedWith(
      await api(cp.base, 'POST', '/api/v1/account/step-up', { token, body: { password: 'not an agent proof' } }),
      403,
      'STEP_UP_WALLET_REQUIRED',
    );

    const stepChallenge = async () => {
      const answer = await api(cp.base, 'POST', '/api/v1/account/step-up/challenge', { token });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body as { message: string; expires_at: string; wallet_address: string };
    };
    const stepUp = async (message: string, by: PrivateKeyAccount = wallet) =>
      api(cp.base, 'POST', '/api/v1/account/step-up', {
        token,
        body: { wallet: { message, signature: await by.signMessage({ message }) } },
      });

    const issued = await stepChallenge();
    expect(issued.wallet_address).toBe(wallet.address);
    expect(issued.message).toContain('step-up');
    // Another wallet's signature, and a registration challenge offered as a step-up proof, are refused.
    refusedWith(await stepUp(issued.message, privateKeyToAccount(generatePrivateKey())), 401, 'SIWE_SIGNATURE_INVALID');
    const registration = await challenge(wallet.address);
    refusedWith(await stepUp(registration.message), 401, 'SIWE_MESSAGE_NOT_ISSUED');
    // Nor is a step-up challenge a registration.
    refusedWith(await register(issued.message, await wallet.signMessage({ message: issued.message })), 401, 'SIWE_MESSAGE_NOT_ISSUED');

    const stepped = await stepUp(issued.message);
    expect(stepped.status, JSON.stringify(stepped.body)).toBe(200);
    expect(stepped.body).toEqual({ method: 'wallet', expires_at: expect.any(String) });
    refusedWith(await stepUp(issued.message), 401, 'SIWE_CHALLENGE_USED');

    // Money out is behind the same step-up: the agent can name where to withdraw to, and ask to withdraw (an empty
    // balance, or no payout wallet on this server, refuses the amount, not the credential).
    const address = await addWithdrawalAddress();
    expect(address.status, JSON.stringify(address.body)).toBe(201);
    const withdrawal = await api(cp.base, 'POST', '/api/v1/withdrawals', {
      token,
      idempotent: true,
      body: { amount_micro: '1000000', withdrawal_address_id: (address.body as any).id },
    });
    expect([409, 503], JSON.stringify(withdrawal.body)).toContain(withdrawal.status);

    const created = await createKey();
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const worker = created.body as any;
    expect(worker.scopes).toEqual(['renter']);
    const read = await api(cp.base, 'GET', '/api/v1/account', { token: worker.secret });
    expect((read.body as any).account_id).toBe(registered.account.account_id);
    // The step-up belongs to the key that made it: the new key has none of its own.
    refusedWith(
      await api(cp.base, 'POST', '/api/v1/account/api-keys', {
        token: worker.secret,
        idempotent: true,
        body: { label: 'x', scopes: ['renter'] },
      }),
      403,
      'STEP_UP_REQUIRED',
    );
  });
});
