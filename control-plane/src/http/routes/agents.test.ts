import { randomBytes } from 'node:crypto';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleApp } from '../../app.js';
import type { WalletCodeReader } from '../../chain/wallet-code.js';
import { ManualClock } from '../../clock.js';
import { replicaAdapters, serviceAdapters } from '../../runtime.js';
import { buildServices } from '../../services/index.js';
import { createAccountAuthenticator } from '../../store/accounts-authenticator.js';
import { DIALECTS } from '../../testing/stores.js';
import { createTestStore, type TestStore } from '../../testing/stores.js';
import { bearer, seedAccount, testConfig } from '../../testing/app.js';
import type { AppContext } from '../context.js';
import { createMetrics } from '../metrics.js';
import { MemoryRateLimiter } from '../rate-limit.js';
import type { TypedApp } from '../typed-app.js';

// Agent registration in process, where a manual clock and a wallet-code double make the edges exact: the five-minute
// expiry to the millisecond, the rate limits, concurrent use of one challenge, and the answers without a network.
// The end-to-end suite (test/e2e/agent-registration.test.ts) runs the same flows against anvil and `ark-cp serve`.

/** Addresses "with code", as the chain would answer; `down` makes the node unreachable. */
class WalletCodeDouble implements WalletCodeReader {
  readonly contracts = new Set<string>();
  down = false;
  async hasCode(address: `0x${string}`): Promise<boolean> {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:8545');
    return this.contracts.has(address.toLowerCase());
  }
}

interface Harness {
  app: TypedApp;
  ctx: AppContext;
  clock: ManualClock;
  close(): Promise<void>;
}

async function startApp(store: TestStore, walletCode: WalletCodeReader | null, perMinute: number): Promise<Harness> {
  const clock = new ManualClock('2026-11-24T12:00:00.000Z');
  const config = testConfig({
    databaseUrl: store.dialect === 'postgres' ? store.location : null,
    publicBaseUrl: 'https://ark.example.test',
    authAttemptsPerMinute: perMinute,
  });
  const mailer = { send: async () => {} };
  const rateLimiter = new MemoryRateLimiter();
  const authenticator = createAccountAuthenticator(store);
  const services = buildServices({ store, clock, config, mailer, ...serviceAdapters(config, clock), x402Chain: null, walletCode });
  const replicas = replicaAdapters(store, config.databaseUrl);
  const { app, ctx } = await assembleApp({
    config,
    store,
    clock,
    mailer,
    rateLimiter,
    authenticator,
    metrics: createMetrics(),
    services,
    ...replicas,
  });
  await app.ready();
  return {
    app,
    ctx,
    clock,
    async close() {
      await app.close();
      await services.close();
      await replicas.claimLocks.close();
      authenticator.close();
    },
  };
}

describe.each(DIALECTS)('agent registration routes on %s', (dialect) => {
  let store: TestStore;
  let h: Harness;
  const code = new WalletCodeDouble();
  const agent = { name: 'unit agent', vendor: 'Example Labs', model: 'm-1' };

  beforeAll(async () => {
    store = await createTestStore(dialect);
    h = await startApp(store, code, 3);
  });
  afterAll(async () => {
    await h?.close();
    await store?.destroy();
  });

  const wallet = () => privateKeyToAccount(generatePrivateKey());
  /** A fresh source address per call, so only the limit under test can be reached. */
  const freshIp = () => `127.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${(randomBytes(1)[0] ?? 0) | 1}`;
  const challenge = (address: string, remoteAddress = freshIp()) =>
    h.app.inject({ method: 'POST', url: '/api/v1/agents/accounts/challenge', payload: { address }, remoteAddress });
  const register = (message: string, signature: string, remoteAddress = freshIp()) =>
    h.app.inject({ method: 'POST', url: '/api/v1/agents/accounts', payload: { message, signature, agent }, remoteAddress });
  const signedChallenge = async (by: PrivateKeyAccount) => {
    const res = await challenge(by.address);
    expect(res.statusCode, res.body).toBe(200);
    const { message, expires_at } = res.json() as { message: string; expires_at: string };
    return { message, expiresAt: expires_at, signature: await by.signMessage({ message }) };
  };

  it('gives challenges five minutes to the millisecond (the default), then refuses them as expired', async () => {
    const w = wallet();
    const issuedAt = h.clock.now().getTime();
    const { message, expiresAt, signature } = await signedChallenge(w);
    expect(Date.parse(expiresAt) - issuedAt).toBe(300_000);
    await h.clock.advance(300_000);
    const late = await register(message, signature);
    expect(late.statusCode).toBe(401);
    expect(late.json().error.code).toBe('SIWE_CHALLENGE_EXPIRED');
    // One millisecond back: the wall clock steps (advance() only moves forward).
    h.clock.set(h.clock.now().getTime() - 1);
    const justInTime = await register(message, signature);
    expect(justInTime.statusCode, justInTime.body).toBe(201);
    await h.clock.advance(1);
  });

  it('limits challenges per wallet whatever the source address, and per source address whatever the wallet', async () => {
    const w = wallet();
    for (let i = 0; i < 3; i++) expect((await challenge(w.address)).statusCode).toBe(200);
    const fourth = await challenge(w.address.toLowerCase());
    expect(fourth.statusCode).toBe(429);
    expect(fourth.json().error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    expect(fourth.headers['retry-after']).toBeUndefined();

    const ip = freshIp();
    for (let i = 0; i < 3; i++) expect((await challenge(wallet().address, ip)).statusCode).toBe(200);
    expect((await challenge(wallet().address, ip)).statusCode).toBe(429);
    // A minute later both budgets are back.
    await h.clock.advance(60_000);
    expect((await challenge(w.address)).statusCode).toBe(200);
    expect((await challenge(wallet().address, ip)).statusCode).toBe(200);
  });

  it('lets one of two concurrent registrations with the same signed message win; the other is refused as used', async () => {
    const w = wallet();
    const { message, signature } = await signedChallenge(w);
    const answers = await Promise.all([register(message, signature), register(message, signature), register(message, signature)]);
    const statuses = answers.map((a) => a.statusCode).sort();
    expect(statuses, answers.map((a) => a.body).join('\n')).toEqual([201, 401, 401]);
    for (const lost of answers.filter((a) => a.statusCode === 401)) expect(lost.json().error.code).toBe('SIWE_CHALLENGE_USED');
    const accounts = await store.db
      .selectFrom('account_wallets')
      .select('account_id')
      .where('address_key', '=', w.address.toLowerCase())
      .execute();
    expect(accounts).toHaveLength(1);
  });

  it('gives two first registrations of one wallet, racing with two challenges, one account and a key each', async () => {
    const w = wallet();
    const [a, b] = [await signedChallenge(w), await signedChallenge(w)];
    const answers = await Promise.all([register(a.message, a.signature), register(b.message, b.signature)]);
    for (const answer of answers) expect(answer.statusCode, answer.body).toBe(201);
    const [first, second] = answers.map((x) => x.json());
    expect(first.account.account_id).toBe(second.account.account_id);
    expect([first.account_created, second.account_created].sort()).toEqual([false, true]);
    expect(first.api_key.api_key_id).not.toBe(second.api_key.api_key_id);
  });

  it('refuses a wallet with code, and answers 503 (retryable) while the network cannot be read, creating nothing', async () => {
    const contract = wallet();
    code.contracts.add(contract.address.toLowerCase());
    const c = await signedChallenge(contract);
    const refused = await register(c.message, c.signature);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('WALLET_NOT_EOA');

    const w = wallet();
    const d = await signedChallenge(w);
    code.down = true;
    const unavailable = await register(d.message, d.signature);
    code.down = false;
    expect(unavailable.statusCode).toBe(503);
    expect(unavailable.json().error).toMatchObject({ code: 'WALLET_CHECK_UNAVAILABLE', retryable: true });
    // The challenge was not spent: the same signed message registers once the network answers.
    const later = await register(d.message, d.signature);
    expect(later.statusCode, later.body).toBe(201);
    expect(later.json().account_created).toBe(true);
    const rows = await store.db
      .selectFrom('account_wallets')
      .select('address_key')
      .where('address_key', '=', contract.address.toLowerCase())
      .execute();
    expect(rows).toHaveLength(0);
  });

  it('tells a person that there is no sign-in wallet to step up with, and an agent that a password is not its proof', async () => {
    const person = await seedAccount(h.ctx, { role: 'renter' });
    const res = await h.app.inject({ method: 'POST', url: '/api/v1/account/step-up/challenge', headers: bearer(person.apiKey) });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('STEP_UP_WALLET_NOT_LINKED');
    const w = wallet();
    const c = await signedChallenge(w);
    const registered = (await register(c.message, c.signature)).json();
    const byWallet = await h.app.inject({
      method: 'POST',
      url: '/api/v1/account/step-up',
      headers: bearer(person.apiKey),
      payload: { wallet: { message: c.message, signature: c.signature } },
    });
    expect(byWallet.statusCode).toBe(409);
    expect(byWallet.json().error.code).toBe('STEP_UP_WALLET_NOT_LINKED');
    const byPassword = await h.app.inject({
      method: 'POST',
      url: '/api/v1/account/step-up',
      headers: bearer(registered.api_key.secret),
      payload: { password: 'a password of some length' },
    });
    expect(byPassword.statusCode).toBe(403);
    expect(byPassword.json().error.code).toBe('STEP_UP_WALLET_REQUIRED');
  });

  it("refuses another account's step-up challenge", async () => {
    const [one, two] = [wallet(), wallet()];
    const keyOf = async (w: PrivateKeyAccount) => {
      const c = await signedChallenge(w);
      return (await register(c.message, c.signature)).json().api_key.secret as string;
    };
    const [keyOne, keyTwo] = [await keyOf(one), await keyOf(two)];
    const issued = await h.app.inject({
      method: 'POST',
      url: '/api/v1/account/step-up/challenge',
      headers: bearer(keyOne),
      remoteAddress: freshIp(),
    });
    expect(issued.statusCode, issued.body).toBe(200);
    const { message } = issued.json() as { message: string };
    // Account two answers account one's challenge, signed by account one's wallet: not its proof.
    const stolen = await h.app.inject({
      method: 'POST',
      url: '/api/v1/account/step-up',
      headers: bearer(keyTwo),
      remoteAddress: freshIp(),
      payload: { wallet: { message, signature: await one.signMessage({ message }) } },
    });
    expect(stolen.statusCode).toBe(401);
    expect(stolen.json().error.code).toBe('SIWE_MESSAGE_NOT_ISSUED');
  });
});

describe('agent registration without a primary network', () => {
  let store: TestStore;
  let h: Harness;
  beforeAll(async () => {
    store = await createTestStore('sqlite');
    h = await startApp(store, null, 100);
  });
  afterAll(async () => {
    await h?.close();
    await store?.destroy();
  });

  it('answers 503 WALLET_CHECK_UNAVAILABLE at the challenge, before any wallet signs, and stores no challenge', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/api/v1/agents/accounts/challenge',
      payload: { address: privateKeyToAccount(generatePrivateKey()).address },
    });
    expect(res.statusCode).toBe(503);
    expect(res.json().error).toMatchObject({ code: 'WALLET_CHECK_UNAVAILABLE', retryable: true });
    expect(await store.db.selectFrom('agent_challenges').select('nonce').execute()).toHaveLength(0);
  });
});
