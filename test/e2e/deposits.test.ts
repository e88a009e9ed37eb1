// Money in by deposit, end to end: a real anvil playing Base, TestUsdc at the real Base USDC address, an 18-decimal
// stablecoin and a mock ETH/USD aggregator, and the real control plane (`ark-cp serve`) on SQLite and on PostgreSQL,
// driven only through HTTP, its CLI and the chain. A deposit over the balance cap never blocks a smaller one, and an
// operator credits it over the cap or refunds it to its sender through the payout wallet, exactly once across kill -9.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Address, Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { spawnProcess, waitFor } from '../harness/processes.js';
import { type DepositChain, randomDepositXpub, renterKey, setupDepositChain } from './deposit-helpers.js';
import { api, type ControlPlane, controlPlaneCli, repoRoot, startControlPlane } from './host-side-helpers.js';
import { adminSession, call, fundedPayoutWallet, PASSWORD, type PayoutWalletSetup, randomTag, transfersOnChain } from './payout-helpers.js';
import { controlPlaneBundle } from '../harness/bundles.js';

const USDC = 1_000_000n;

describe.each(['sqlite', 'postgres'] as const)('deposits on %s', (dialect) => {
  let anvil: Anvil;
  let chain: DepositChain;
  let database: TestDatabase | null = null;
  let cp: ControlPlane;
  let env: NodeJS.ProcessEnv;
  let token: string;
  let address: Address;
  let expectedAvailable = 0n;
  let wallet: PayoutWalletSetup;
  let adminEmail = '';
  const replicas: ControlPlane[] = [];

  const start = async (extra: NodeJS.ProcessEnv = {}, dataDir?: string) => {
    const started = await startControlPlane({ databaseUrl: database?.url ?? null, dataDir, env: { ...env, ...extra } });
    replicas.push(started);
    return started;
  };
  const balance = async (base = cp.base) => {
    const answer = await api(base, 'GET', '/api/v1/billing/balance?limit=100', { token });
    expect(answer.status).toBe(200);
    return answer.body as { available_micro: string; deposits: { items: any[]; next_cursor: string | null } };
  };
  const depositsOf = async (txHash: Hex) => (await balance()).deposits.items.filter((d) => d.tx_hash === txHash.toLowerCase());
  const waitState = (txHash: Hex, state: string, timeoutMs = 60_000) =>
    waitFor(
      async () => {
        const found = await depositsOf(txHash);
        return found.length === 1 && found[0].state === state ? found[0] : null;
      },
      { timeoutMs, intervalMs: 50, description: `deposit ${txHash} ${state}` },
    );
  const ledgerOk = async () => JSON.parse(await controlPlaneCli(cp, ['ledger', 'verify'])).ok as boolean;

  beforeAll(async () => {
    anvil = await startAnvil();
    chain = await setupDepositChain(anvil);
    if (dialect === 'postgres') database = await createTestDatabase();
    // Refunds of held deposits are paid by the payout wallet.
    wallet = await fundedPayoutWallet(chain, anvil, 1_000n * USDC);
    env = {
      ARK_CHAINS: chain.chainsFile,
      ARK_DEPOSIT_XPUB: randomDepositXpub(),
      ARK_SECRET_KEY: randomBytes(32).toString('hex'),
      ARK_CHAIN_POLL_INTERVAL_MS: '100',
      ARK_CHAIN_MAX_BLOCKS: '4',
      ARK_BALANCE_CAP_MICRO: String(30n * USDC),
      ARK_PAYOUT_KEY_FILE: wallet.keyFile,
      ARK_PAYOUT_POLL_INTERVAL_MS: '100',
    };
    cp = await start();
    token = await renterKey(cp, `depositor-${randomBytes(4).toString('hex')}@example.test`);
    adminEmail = `admin-${randomTag()}@example.test`;
    await controlPlaneCli(cp, ['accounts', 'create', '--email', adminEmail, '--role', 'admin', '--password', PASSWORD, '--verified']);
  }, 240_000);

  afterAll(async () => {
    for (const replica of replicas) await replica.process.stop('SIGKILL');
    await anvil?.stop();
    await database?.drop();
  });

  it('gives one deposit address, then credits USDC, an 18-decimal token and ETH once each after finality', async () => {
    const first = await api(cp.base, 'GET', '/api/v1/billing/deposit-address', { token });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      chain_id: 8453,
      network: 'base',
      min_deposit_micro: '1000000',
      max_deposit_micro: String(30n * USDC),
    });
    expect(first.body.networks[0]).toMatchObject({
      name: 'base',
      chain_id: 8453,
      native: { symbol: 'ETH', decimals: 18, spread_bps: 100 },
    });
    expect(first.body.assets.map((a: any) => a.symbol)).toEqual(['USDC', 'TUSD', 'ETH']);
    address = first.body.address;
    const again = await api(cp.base, 'GET', '/api/v1/billing/deposit-address', { token });
    expect(again.body.address).toBe(address);

    // 0.001 ETH at 3000 USD less 1 %: 2.97 USD.
    const cases: Array<[string, () => Promise<Hex>, bigint]> = [
      ['USDC', () => chain.sendUsdc(address, 5n * USDC), 5_000_000n],
      ['TUSD', () => chain.sendStable18(address, 2_500_000_000_000_000_000n), 2_500_000n],
      ['ETH', () => chain.sendEth(address, 1_000_000_000_000_000n), 2_970_000n],
    ];
    const hashes: Hex[] = [];
    for (const [asset, send, micro] of cases) {
      const hash = await send();
      hashes.push(hash);
      const seen = await waitState(hash, 'SEEN');
      expect(seen).toMatchObject({ asset, network: 'base', credited_micro: null });
      await anvil.mine(2);
      const credited = await waitState(hash, 'CREDITED');
      expect(credited.credited_micro).toBe(micro.toString());
      expectedAvailable += micro;
    }
    expect((await balance()).available_micro).toBe(expectedAvailable.toString());
    // More blocks and more steps change nothing: each transfer stays credited once.
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = await balance();
    expect(after.available_micro).toBe(expectedAvailable.toString());
    for (const hash of hashes) expect(await depositsOf(hash)).toHaveLength(1);
    expect(await ledgerOk()).toBe(true);
  });

  it('never credits a deposit reorged away before finality', async () => {
    const snapshot = await anvil.rpc<string>('evm_snapshot');
    const hash = await chain.sendUsdc(address, 7n * USDC);
    await waitState(hash, 'SEEN');
    await anvil.rpc('evm_revert', [snapshot]);
    await anvil.mine(4);
    await waitFor(async () => (await depositsOf(hash)).length === 0, {
      timeoutMs: 30_000,
      intervalMs: 50,
      description: 'the reorged deposit to drop',
    });
    // Well past the old block's finality, it is still not there, and the balance never moved.
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await depositsOf(hash)).toHaveLength(0);
    expect((await balance()).available_micro).toBe(expectedAvailable.toString());
  });

  it('holds a deposit over the balance cap and credits it once there is room', async () => {
    const hash = await chain.sendUsdc(address, 25n * USDC);
    await anvil.mine(2);
    const held = await waitState(hash, 'HELD');
    expect(held.reason).toBe('balance_cap');
    expect((await balance()).available_micro).toBe(expectedAvailable.toString());
    // Room appears: the operator raises the cap (restart with the new setting).
    await cp.process.stop('SIGTERM');
    cp = await start({ ARK_BALANCE_CAP_MICRO: String(100n * USDC) }, cp.dataDir);
    const credited = await waitState(hash, 'CREDITED');
    expect(credited.credited_micro).toBe((25n * USDC).toString());
    expectedAvailable += 25n * USDC;
    expect((await balance()).available_micro).toBe(expectedAvailable.toString());
  }, 120_000);

  it('never holds a smaller deposit behind one over the cap; an operator credits one over the cap and refunds another, each once across kill -9', async () => {
    // The cap is 100 USDC now. 150 can never fit: it is HELD for an operator. The 3 after it is credited at finality.
    const big = await chain.sendUsdc(address, 150n * USDC);
    const small = await chain.sendUsdc(address, 3n * USDC);
    await anvil.mine(2);
    expect(await waitState(big, 'HELD')).toMatchObject({ reason: 'exceeds_balance_cap', credited_micro: null });
    expect((await waitState(small, 'CREDITED')).credited_micro).toBe(String(3n * USDC));
    expectedAvailable += 3n * USDC;
    expect((await balance()).available_micro).toBe(expectedAvailable.toString());
    // Finality passes again and again: it stays HELD, nothing moves by itself.
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await depositsOf(big))[0].state).toBe('HELD');
    const bigId = (await depositsOf(big))[0].deposit_id as string;

    // The operators' queue shows it, with its sender, as needing an operator and refundable.
    const admin = await adminSession(cp, adminEmail);
    const queue = async (state: string) =>
      (await call(cp, 'GET', `/api/v1/admin/deposits?state=${state}&limit=100`, { token: admin })).body.items as any[];
    expect((await queue('HELD')).find((d) => d.deposit_id === bigId)).toMatchObject({
      needs_operator: true,
      refund_refusal: null,
      from_address: chain.funder.toLowerCase(),
    });

    // Credit by override through the admin route (TOTP step-up, Idempotency-Key), then kill -9 and replay the key.
    const key = randomUUID();
    const credit = () =>
      call(cp, 'POST', `/api/v1/admin/deposits/${bigId}/credit`, {
        token: admin,
        headers: { 'idempotency-key': key },
        body: { reason: 'large top-up agreed with the customer' },
      });
    const credited = await credit();
    expect(credited.status, JSON.stringify(credited.body)).toBe(200);
    expect(credited.body).toMatchObject({ deposit_id: bigId, state: 'CREDITED', already: false });
    await cp.process.stop('SIGKILL');
    cp = await start({ ARK_BALANCE_CAP_MICRO: String(100n * USDC) }, cp.dataDir);
    const replayed = await credit();
    expect(replayed.status).toBe(200);
    expect(replayed.body).toEqual(credited.body);
    expectedAvailable += 150n * USDC;
    expect((await balance()).available_micro).toBe(expectedAvailable.toString());
    expect((await depositsOf(big))[0]).toMatchObject({ state: 'CREDITED', reason: 'operator_override' });

    // Another over the cap, refunded to its sender with ark-cp while the server is down; the payer is killed with
    // -9 right after pinning the refund's nonce, then restarted: the sender is paid exactly once.
    const refundable = await chain.sendUsdc(address, 120n * USDC);
    await anvil.mine(2);
    const heldAgain = await waitState(refundable, 'HELD');
    await cp.process.stop('SIGTERM');
    const before = await transfersOnChain(chain, wallet.address, chain.funder);
    const refund = JSON.parse(
      await controlPlaneCli(cp, [
        'deposits',
        'refund',
        '--id',
        heldAgain.deposit_id,
        '--reason',
        'over the cap: returned to the sender',
        '--admin-email',
        adminEmail,
      ]),
    );
    expect(refund).toMatchObject({ state: 'REFUNDING', refund_to: chain.funder.toLowerCase(), already: false });
    const crashing = spawnProcess(process.execPath, [controlPlaneBundle, 'serve'], {
      cwd: repoRoot,
      env: { ...cp.env, ARK_FAULT_EXIT_AT: 'payout.pinned' },
      exitSignal: 'SIGKILL',
    });
    const exit = await Promise.race([crashing.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 60_000))]);
    if (exit === null) await crashing.stop('SIGKILL');
    expect(exit, crashing.output()).toEqual({ code: null, signal: 'SIGKILL' });
    cp = await start({ ARK_BALANCE_CAP_MICRO: String(100n * USDC) }, cp.dataDir);
    await waitFor(
      async () => {
        const found = await depositsOf(refundable);
        if (found[0]?.state === 'REFUNDED') return true;
        await anvil.mine(1);
        return false;
      },
      { timeoutMs: 90_000, intervalMs: 100, description: 'the refund paid and final' },
    );
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const paid = (await transfersOnChain(chain, wallet.address, chain.funder)).slice(before.length);
    expect(paid.map((t) => t.value)).toEqual([120n * USDC]);
    expect((await queue('REFUNDED')).find((d) => d.deposit_id === heldAgain.deposit_id)).toMatchObject({
      refund: { id: refund.refund_id, state: 'CONFIRMED', tx_hash: paid[0]?.txHash },
      resolution_reason: 'over the cap: returned to the sender',
    });
    // The refund never touched the balance.
    expect((await balance()).available_micro).toBe(expectedAvailable.toString());
    expect(await ledgerOk()).toBe(true);
  }, 300_000);

  it('killed with -9 while deposits flow and restarted, credits nothing twice and misses nothing', async () => {
    const hashes: Hex[] = [];
    for (let i = 0; i < 16; i++) {
      hashes.push(await chain.sendUsdc(address, USDC + BigInt(i)));
      if (i === 7) await cp.process.stop('SIGKILL');
    }
    await anvil.mine(2);
    cp = await start({ ARK_BALANCE_CAP_MICRO: '0' }, cp.dataDir);
    await waitFor(
      async () => {
        const items = (await balance()).deposits.items;
        return hashes.every((h) => items.some((d) => d.tx_hash === h.toLowerCase() && d.state === 'CREDITED'));
      },
      { timeoutMs: 60_000, intervalMs: 100, description: 'all 16 deposits credited' },
    );
    const items = (await balance()).deposits.items;
    for (const h of hashes) expect(items.filter((d) => d.tx_hash === h.toLowerCase())).toHaveLength(1);
    expectedAvailable += hashes.reduce((sum, _h, i) => sum + USDC + BigInt(i), 0n);
    expect((await balance()).available_micro).toBe(expectedAvailable.toString());
    expect(await ledgerOk()).toBe(true);
    const status = JSON.parse(await controlPlaneCli(cp, ['chain', 'status'])).networks[0];
    expect(status).toMatchObject({ network: 'base', chain_id: 8453, finality_stalled: false });
    const listed = JSON.parse(
      await controlPlaneCli(cp, ['deposits', 'list', '--email', (await api(cp.base, 'GET', '/api/v1/account', { token })).body.email]),
    );
    expect(listed.deposits.length).toBeGreaterThanOrEqual(20);
  }, 300_000);

  it.runIf(dialect === 'postgres')(
    'two replicas on one database credit every deposit exactly once',
    async () => {
      const second = await start({ ARK_BALANCE_CAP_MICRO: '0' });
      const hashes: Hex[] = [];
      for (let i = 0; i < 12; i++) hashes.push(await chain.sendUsdc(address, 2n * USDC + BigInt(i)));
      await anvil.mine(2);
      await waitFor(
        async () => {
          const items = (await balance(second.base)).deposits.items;
          return hashes.every((h) => items.some((d) => d.tx_hash === h.toLowerCase() && d.state === 'CREDITED'));
        },
        { timeoutMs: 60_000, intervalMs: 100, description: 'all 12 deposits credited' },
      );
      const items = (await balance()).deposits.items;
      for (const h of hashes) expect(items.filter((d) => d.tx_hash === h.toLowerCase())).toHaveLength(1);
      expectedAvailable += hashes.reduce((sum, _h, i) => sum + 2n * USDC + BigInt(i), 0n);
      expect((await balance()).available_micro).toBe(expectedAvailable.toString());
      expect((await balance(second.base)).available_micro).toBe(expectedAvailable.toString());
      expect(await ledgerOk()).toBe(true);
    },
    180_000,
  );
});
