// Money out end to end (issue 12), on SQLite and on PostgreSQL: a real anvil playing Base with TestUsdc at the Base
// USDC address, the real control plane (`ark-cp serve`) paying from a payout wallet read from a 0600 key file, driven
// only through HTTP, its CLI and the chain. A host earns through a metered job and is paid out; a renter withdraws;
// a request over the review threshold waits unsigned until an admin with TOTP approves it; another is rejected and its
// lock returns; review once a nonce is pinned answers 409; an API key on the admin routes answers 403. Money goes out
// by balance, not by sign-up role (issue 22): a renter-role account that hosts is paid its earnings, and a host-role
// account withdraws what it deposited.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { waitFor } from '../harness/processes.js';
import { ark, arkConfigDir, expectExit } from './cli-helpers.js';
import { type DepositChain, setupDepositChain } from './deposit-helpers.js';
import { type ControlPlane, controlPlaneCli, startControlPlane } from './host-side-helpers.js';
import {
  addWithdrawalAddress,
  adminSession,
  call,
  fundedPayoutWallet,
  hostEarns,
  PASSWORD,
  type PayoutWalletSetup,
  randomAddress,
  randomTag,
  steppedUpSession,
  transfersOnChain,
  USDC,
  waitWithdrawal,
} from './payout-helpers.js';

/** ARK_EARNINGS_MATURITY_S of this suite's control plane. */
const MATURITY_S = 5;

describe.each(['sqlite', 'postgres'] as const)('payouts on %s', (dialect) => {
  let anvil: Anvil;
  let chain: DepositChain;
  let database: TestDatabase | null = null;
  let cp: ControlPlane;
  let wallet: PayoutWalletSetup;
  let admin = '';
  let adminKey = '';
  let host = '';
  let renter = '';
  let renterEmail = '';
  let jobId = '';
  const closeAgents: Array<() => void> = [];
  // The operator's alert receiver (ARK_ALERT_WEBHOOK_URL): a real HTTP server on loopback keeping what it is sent.
  let receiver: Server;
  const alerts: any[] = [];

  const cli = async (args: string[]) => JSON.parse(await controlPlaneCli(cp, args));
  const available = async () => BigInt((await call(cp, 'GET', '/api/v1/billing/balance', { token: renter })).body.available_micro);
  const earnings = async () => (await call(cp, 'GET', '/api/v1/hosts/earnings?limit=100', { token: host })).body;
  /** Waits for the maturity worker to make `amount` of a host's earnings payable. */
  const matured = (token: string, amount: bigint) =>
    waitFor(
      async () => {
        const body = (await call(cp, 'GET', '/api/v1/hosts/earnings', { token })).body;
        return BigInt(body.payable_micro) >= amount ? body : null;
      },
      { timeoutMs: (MATURITY_S + 10) * 1000, intervalMs: 200, description: 'the earnings matured' },
    );
  const withdraw = (token: string, amount: bigint, addressId: string) =>
    call(cp, 'POST', '/api/v1/withdrawals', { token, body: { amount_micro: amount.toString(), withdrawal_address_id: addressId } });
  const review = (id: string, decision: 'approve' | 'reject', reason: string, token = admin) =>
    call(cp, 'POST', `/api/v1/admin/withdrawals/${id}/review`, { token, body: { decision, reason } });
  const usdcOf = (address: Address) =>
    chain.public.readContract({
      address: chain.usdc,
      abi: chain.contracts.TestUsdc.abi,
      functionName: 'balanceOf',
      args: [address],
    }) as Promise<bigint>;

  beforeAll(async () => {
    anvil = await startAnvil();
    chain = await setupDepositChain(anvil);
    wallet = await fundedPayoutWallet(chain, anvil, 1_000n * USDC);
    if (dialect === 'postgres') database = await createTestDatabase();
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        alerts.push(JSON.parse(body));
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: {
        ARK_CHAINS: chain.chainsFile,
        ARK_ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`,
        ARK_SECRET_KEY: randomBytes(32).toString('hex'),
        ARK_CHAIN_POLL_INTERVAL_MS: '200',
        ARK_PAYOUT_KEY_FILE: wallet.keyFile,
        ARK_PAYOUT_POLL_INTERVAL_MS: '100',
        ARK_PAYOUT_REPLACE_AFTER_S: '1',
        ARK_WITHDRAWAL_REVIEW_ABOVE_MICRO: String(20n * USDC),
        ARK_WITHDRAWAL_NEW_ADDRESS_HOLD_S: '0',
        ARK_WITHDRAWAL_REVIEW_FIRST: '0',
        ARK_HEARTBEAT_INTERVAL_S: '1',
        ARK_METER_INTERVAL_S: '1',
        // Earnings mature 5 s after their charge (issue 24): long enough to see a payout of pending money refused.
        ARK_EARNINGS_MATURITY_S: String(MATURITY_S),
        // 3600 USDC an hour: one USDC a second of metered time.
        ARK_SEED_RATE_MICRO_PER_HOUR: String(3_600n * USDC),
        // Past the default spend-rate cap (50 USDC/h) on purpose: the cap is spend-cap.test.ts's business.
        ARK_SPEND_RATE_CAP_MICRO_PER_HOUR: '1000000000000000',
      },
    });
    const tag = randomTag();
    const adminEmail = `admin-${tag}@example.test`;
    renterEmail = `renter-${tag}@example.test`;
    [, host, renter] = await Promise.all([
      (async () => {
        await cli(['accounts', 'create', '--email', adminEmail, '--role', 'admin', '--password', PASSWORD, '--verified']);
        adminKey = (await cli(['keys', 'create', '--email', adminEmail, '--scopes', 'renter', '--label', 'admin-key'])).secret;
        admin = await adminSession(cp, adminEmail);
      })(),
      steppedUpSession(cp, 'host', `host-${tag}@example.test`),
      steppedUpSession(cp, 'renter', renterEmail),
    ]);
    await cli(['ledger', 'credit', '--email', renterEmail, '--amount-micro', String(3_000n * USDC), '--reason', 'e2e funds']);
    const earned = await hostEarns(cp, { hostToken: host, renterToken: renter, runtimeMs: 3_000 });
    jobId = earned.jobId;
    closeAgents.push(() => earned.agent.close());
  }, 300_000);

  afterAll(async () => {
    for (const close of closeAgents) close();
    await cp?.process.stop('SIGKILL');
    await anvil?.stop();
    await database?.drop();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('pays a host its metered earnings on chain exactly once, and shows them over HTTP', async () => {
    const charged = await earnings();
    // Three seconds at one USDC a second: the host's share of the charge is pending, not payable, until it matures.
    expect(charged).toMatchObject({ pending_micro: String(3n * USDC), payable_micro: '0' });
    expect(Date.parse(charged.next_matures_at)).toBeGreaterThan(Date.now() - 1_000);
    expect(charged.items).toContainEqual({ kind: 'job', job_id: jobId, earned_micro: String(3n * USDC), at: expect.any(String) });
    const to = randomAddress();
    const addressId = await addWithdrawalAddress(cp, host, to);
    // A payout draws only matured earnings: pending ones are refused, and nothing is locked.
    const early = await withdraw(host, 2n * USDC, addressId);
    expect(early.status, JSON.stringify(early.body)).toBe(409);
    expect(early.body.error.code).toBe('INSUFFICIENT_BALANCE');
    expect(await earnings()).toMatchObject({ locked_micro: '0' });

    const before = await matured(host, 3n * USDC);
    expect(before).toMatchObject({ pending_micro: '0', payable_micro: String(3n * USDC), next_matures_at: null });
    const requested = await withdraw(host, 2n * USDC, addressId);
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    expect(requested.body).toMatchObject({
      kind: 'payout',
      state: 'INTENT',
      amount_micro: String(2n * USDC),
      network: 'base',
      chain_id: 8453,
    });
    const locked = await earnings();
    expect(locked).toMatchObject({ payable_micro: String(USDC), locked_micro: String(2n * USDC), paid_out_micro: '0' });

    const paid = await waitWithdrawal(cp, anvil, host, requested.body.id, 'CONFIRMED');
    expect(paid.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await usdcOf(to)).toBe(2n * USDC);
    // More blocks and more payer steps pay nothing again.
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const transfers = await transfersOnChain(chain, wallet.address, to);
    expect(transfers).toEqual([{ to, value: 2n * USDC, txHash: paid.tx_hash }]);
    const after = await earnings();
    expect(after).toMatchObject({ payable_micro: String(USDC), locked_micro: '0', paid_out_micro: String(2n * USDC) });
    expect(after.items).toContainEqual({
      kind: 'payout',
      withdrawal_id: paid.id,
      amount_micro: String(2n * USDC),
      state: 'CONFIRMED',
      at: paid.created_at,
    });
    // A renter key is not a host's: earnings are for the host scope.
    expect((await call(cp, 'GET', '/api/v1/hosts/earnings', { token: adminKey })).status).toBe(403);
  });

  it('pays the rest out with the ark CLI: `ark payout` registers the new address, and the chain pays it once', async () => {
    const to = randomAddress();
    const env = { ARK_URL: cp.base, ARK_API_KEY: host, ARK_CONFIG_DIR: arkConfigDir() };
    const run = expectExit(await ark(['payout', '--amount', '1', '--to', to, '--json'], { env }), 0);
    expect(run.json).toMatchObject({ kind: 'payout', amount_micro: String(USDC), address: to.toLowerCase(), hold_reasons: [] });
    const paid = await waitWithdrawal(cp, anvil, host, run.json.id, 'CONFIRMED');
    expect(await usdcOf(to)).toBe(USDC);
    expect(await transfersOnChain(chain, wallet.address, to)).toEqual([{ to, value: USDC, txHash: paid.tx_hash }]);
    // The CLI's own earnings view agrees: everything earned is paid out.
    const shown = expectExit(await ark(['earnings', '--json'], { env }), 0);
    expect(shown.json).toMatchObject({ payable_micro: '0', locked_micro: '0', paid_out_micro: String(3n * USDC) });
  });

  it('pays a renter withdrawal from the available balance', async () => {
    const availableBefore = await available();
    const to = randomAddress();
    const addressId = await addWithdrawalAddress(cp, renter, to);
    const requested = await withdraw(renter, 5n * USDC, addressId);
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    expect(requested.body.kind).toBe('withdrawal');
    expect(await available()).toBe(availableBefore - 5n * USDC);
    const paid = await waitWithdrawal(cp, anvil, renter, requested.body.id, 'CONFIRMED');
    expect(await usdcOf(to)).toBe(5n * USDC);
    expect(await transfersOnChain(chain, wallet.address, to)).toHaveLength(1);
    expect(await available()).toBe(availableBefore - 5n * USDC);
    const listed = await call(cp, 'GET', '/api/v1/withdrawals?limit=1', { token: renter });
    expect(listed.body.items).toEqual([paid]);
    // A stranger's id is 404, never 403.
    expect((await call(cp, 'GET', `/api/v1/withdrawals/${paid.id}`, { token: host })).status).toBe(404);
    // More than available is refused, nothing locked.
    const tooMuch = await withdraw(renter, 1_000_000n * USDC, addressId);
    expect(tooMuch.status).toBe(409);
    expect(tooMuch.body.error.code).toBe('INSUFFICIENT_BALANCE');
  });

  // Two sign-ups, an operator credit and an ark run are processes of their own: minutes on a loaded machine.
  it('pays a renter-role account that hosts its earnings on chain exactly once, and a host-role account its deposit', {
    timeout: 180_000,
  }, async () => {
    const tag = randomTag();
    // A renter turns hosting on with its session (an enrollment token) and earns two USDC on its machine.
    const renterHost = await steppedUpSession(cp, 'renter', `renter-host-${tag}@example.test`);
    const earned = await hostEarns(cp, { hostToken: renterHost, renterToken: renter, runtimeMs: 2_000 });
    closeAgents.push(() => earned.agent.close());
    const payable = async () =>
      BigInt((await call(cp, 'GET', '/api/v1/hosts/earnings', { token: renterHost })).body.payable_micro as string);
    await matured(renterHost, 2n * USDC);
    expect(await payable()).toBe(2n * USDC);
    const to = randomAddress();
    const addressId = await addWithdrawalAddress(cp, renterHost, to);
    const body = { balance: 'payable', amount_micro: String(2n * USDC), withdrawal_address_id: addressId };
    const requested = await call(cp, 'POST', '/api/v1/withdrawals', { token: renterHost, body });
    expect(requested.status, JSON.stringify(requested.body)).toBe(202);
    expect(requested.body).toMatchObject({ kind: 'payout', amount_micro: String(2n * USDC) });
    const paid = await waitWithdrawal(cp, anvil, renterHost, requested.body.id, 'CONFIRMED');
    await anvil.mine(3);
    expect(await transfersOnChain(chain, wallet.address, to)).toEqual([{ to, value: 2n * USDC, txHash: paid.tx_hash }]);
    expect(await payable()).toBe(0n);
    // Its available balance was never touched, and nothing is payable twice.
    const again = await call(cp, 'POST', '/api/v1/withdrawals', { token: renterHost, body });
    expect(again.body.error.code).toBe('INSUFFICIENT_BALANCE');

    // A host-role account withdraws what it put in from its available balance with `ark withdraw`: a withdrawal, not a
    // payout. Given the password, ark steps up a short session of its own for the request (a key takes no password).
    const hostEmail = `host-deposit-${tag}@example.test`;
    const depositor = await steppedUpSession(cp, 'host', hostEmail);
    await cli(['ledger', 'credit', '--email', hostEmail, '--amount-micro', String(4n * USDC), '--reason', 'e2e deposit']);
    const back = randomAddress();
    const env = { ARK_URL: cp.base, ARK_API_KEY: depositor, ARK_CONFIG_DIR: arkConfigDir(), ARK_PASSWORD: PASSWORD };
    const run = expectExit(await ark(['withdraw', '--amount', '4', '--to', back, '--json'], { env }), 0);
    expect(run.json).toMatchObject({ kind: 'withdrawal', amount_micro: String(4n * USDC), address: back.toLowerCase() });
    const returned = await waitWithdrawal(cp, anvil, depositor, run.json.id, 'CONFIRMED');
    await anvil.mine(3);
    expect(await transfersOnChain(chain, wallet.address, back)).toEqual([{ to: back, value: 4n * USDC, txHash: returned.tx_hash }]);
    expect((await call(cp, 'GET', '/api/v1/billing/balance', { token: depositor })).body.available_micro).toBe('0');
  });

  it('replaces a stuck transfer at the same nonce with a higher fee, and exactly one of the two is paid', async () => {
    const to = randomAddress();
    const addressId = await addWithdrawalAddress(cp, renter, to);
    let id = '';
    let first = { tx_hash: '', nonce: '' };
    const get = async () => (await call(cp, 'GET', `/api/v1/withdrawals/${id}`, { token: renter })).body;
    // Nothing is mined until the test says so: the first transfer sits in the node's pool.
    await anvil.rpc('evm_setAutomine', [false]);
    try {
      const requested = await withdraw(renter, 3n * USDC, addressId);
      expect(requested.status).toBe(202);
      id = requested.body.id;
      const sent = await waitFor(async () => ((await get()).state === 'BROADCAST' ? get() : null), {
        timeoutMs: 30_000,
        intervalMs: 100,
        description: 'the transfer broadcast',
      });
      // Unmined past ARK_PAYOUT_REPLACE_AFTER_S: signed again at the same nonce with higher fees, stored, then sent.
      const replaced = await waitFor(
        async () => {
          const now = await get();
          return now.tx_hash !== sent.tx_hash ? now : null;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: 'the replacement' },
      );
      expect(replaced).toMatchObject({ state: 'BROADCAST', nonce: sent.nonce });
      first = sent;
    } finally {
      await anvil.rpc('evm_setAutomine', [true]);
    }
    const paid = await waitWithdrawal(cp, anvil, renter, id, 'CONFIRMED');
    const transfers = await transfersOnChain(chain, wallet.address, to);
    expect(transfers).toEqual([{ to, value: 3n * USDC, txHash: paid.tx_hash }]);
    // A replacement was mined (the first left the pool), at the nonce pinned first.
    expect(paid.nonce).toBe(first.nonce);
    expect(paid.tx_hash).not.toBe(first.tx_hash);
  });

  it('holds a request over the review threshold unsigned; an admin with TOTP approves it and it is paid', async () => {
    const to = randomAddress();
    const addressId = await addWithdrawalAddress(cp, renter, to);
    const requested = await withdraw(renter, 30n * USDC, addressId);
    expect(requested.status).toBe(202);
    const held = await waitWithdrawal(cp, anvil, renter, requested.body.id, 'UNSIGNED');
    expect(held).toMatchObject({ hold_reasons: ['amount_over_review_threshold'], nonce: null, tx_hash: null });
    // It stays unsigned: nothing goes out while it waits.
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await call(cp, 'GET', `/api/v1/withdrawals/${held.id}`, { token: renter })).body.state).toBe('UNSIGNED');
    expect(await transfersOnChain(chain, wallet.address, to)).toHaveLength(0);

    // API keys never reach admin routes, not even an admin's.
    expect((await call(cp, 'GET', '/api/v1/admin/withdrawals?state=UNSIGNED', { token: adminKey })).status).toBe(403);
    const byKey = await review(held.id, 'approve', 'looks fine to me', adminKey);
    expect(byKey.status).toBe(403);
    expect(byKey.body.error.code).toBe('ADMIN_SESSION_REQUIRED');
    // Nor does a renter's session.
    expect((await review(held.id, 'approve', 'looks fine to me', renter)).status).toBe(403);

    const queue = await call(cp, 'GET', '/api/v1/admin/withdrawals?state=UNSIGNED&limit=100', { token: admin });
    expect(queue.status).toBe(200);
    expect(queue.body.items.map((w: any) => w.id)).toContain(held.id);
    expect((await review(held.id, 'approve', 'no')).status).toBe(422);
    const approved = await review(held.id, 'approve', 'customer verified by phone');
    expect(approved.status, JSON.stringify(approved.body)).toBe(202);
    expect(approved.body).toEqual({ id: held.id, kind: 'withdrawal', decision: 'approve', state: 'INTENT' });
    const paid = await waitWithdrawal(cp, anvil, renter, held.id, 'CONFIRMED');
    expect(await usdcOf(to)).toBe(30n * USDC);
    expect(await transfersOnChain(chain, wallet.address, to)).toHaveLength(1);

    // Its nonce is pinned (it is paid): review answers 409.
    expect(paid.nonce).not.toBeNull();
    const late = await review(held.id, 'reject', 'changed my mind');
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('WITHDRAWAL_NOT_UNSIGNED');
    const audit = await call(cp, 'GET', '/api/v1/admin/audit?limit=100', { token: admin });
    expect(audit.body.items).toContainEqual(
      expect.objectContaining({
        action: 'withdrawal.reviewed',
        subject: held.id,
        detail: expect.objectContaining({ reason: 'customer verified by phone' }),
      }),
    );
  });

  it('rejects a held request and its lock returns; a request to a removed address is never paid', async () => {
    const availableBefore = await available();
    const to = randomAddress();
    const addressId = await addWithdrawalAddress(cp, renter, to);
    const requested = await withdraw(renter, 40n * USDC, addressId);
    await waitWithdrawal(cp, anvil, renter, requested.body.id, 'UNSIGNED');
    expect(await available()).toBe(availableBefore - 40n * USDC);
    const rejected = await review(requested.body.id, 'reject', 'address not on file');
    expect(rejected.body).toEqual({ id: requested.body.id, kind: 'withdrawal', decision: 'reject', state: 'FAILED' });
    expect(await available()).toBe(availableBefore);
    const failed = (await call(cp, 'GET', `/api/v1/withdrawals/${requested.body.id}`, { token: renter })).body;
    expect(failed).toMatchObject({ state: 'FAILED', failure_reason: 'rejected', nonce: null });

    // Held, then the address is removed (its version bumped): approval re-runs the checks and it is held again.
    const other = await withdraw(renter, 25n * USDC, addressId);
    await waitWithdrawal(cp, anvil, renter, other.body.id, 'UNSIGNED');
    expect((await call(cp, 'DELETE', `/api/v1/withdrawal-addresses/${addressId}`, { token: renter })).status).toBe(200);
    expect((await review(other.body.id, 'approve', 'approved before noticing')).body.state).toBe('INTENT');
    const again = await waitWithdrawal(cp, anvil, renter, other.body.id, 'UNSIGNED');
    expect(again.hold_reasons).toEqual(['address_changed']);
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await transfersOnChain(chain, wallet.address, to)).toHaveLength(0);
    expect((await review(other.body.id, 'reject', 'address was removed')).body.state).toBe('FAILED');
    expect(await available()).toBe(availableBefore);
  });

  it('waits while the wallet lacks USDC, raises the alert (log, gauge, alert sink), and pays once it is funded', async () => {
    const gauge = async () => {
      const text = await (await fetch(`${cp.base}/metrics`)).text();
      return /^ark_payout_wallet_low_funds (\d+)/m.exec(text)?.[1];
    };
    const amount = (await usdcOf(wallet.address)) + 5n * USDC;
    const to = randomAddress();
    const requested = await withdraw(renter, amount, await addWithdrawalAddress(cp, renter, to));
    await waitWithdrawal(cp, anvil, renter, requested.body.id, 'UNSIGNED');
    expect((await review(requested.body.id, 'approve', 'large but expected')).status).toBe(202);
    const fired = await waitFor(() => alerts.find((a) => a.alert === 'payout_wallet_low_funds' && a.details.firing === true), {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the low-funds alert at the alert sink',
    });
    expect(fired).toMatchObject({ source: 'ark-control-plane', severity: 'critical', details: { wallet: wallet.address.toLowerCase() } });
    expect(await gauge()).toBe('1');
    // It waits, approved and unsigned: nothing is pinned while the money is not there.
    const waiting = (await call(cp, 'GET', `/api/v1/withdrawals/${requested.body.id}`, { token: renter })).body;
    expect(waiting).toMatchObject({ state: 'INTENT', nonce: null, tx_hash: null });

    await chain.sendUsdc(wallet.address, 10n * USDC);
    await waitWithdrawal(cp, anvil, renter, requested.body.id, 'CONFIRMED');
    expect(await usdcOf(to)).toBe(amount);
    expect(await transfersOnChain(chain, wallet.address, to)).toHaveLength(1);
    expect(await gauge()).toBe('0');
    await waitFor(() => alerts.some((a) => a.alert === 'payout_wallet_low_funds' && a.details.firing === false), {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: 'the low-funds alert resolved',
    });
  });

  it('refuses withdrawals while admissions are paused, except one carrying an acceptance authorization', async () => {
    const addressId = await addWithdrawalAddress(cp, renter, randomAddress());
    const pause = (enabled: boolean) =>
      call(cp, 'POST', '/api/v1/admin/admissions', { token: admin, body: { enabled, reason: 'payout rail drill' } });
    expect((await pause(false)).status).toBe(202);
    try {
      const availableBefore = await available();
      const refused = await withdraw(renter, 2n * USDC, addressId);
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({ code: 'ADMISSIONS_PAUSED', retryable: true });
      expect(await available()).toBe(availableBefore);
      const renterId = (await call(cp, 'GET', '/api/v1/account', { token: renter })).body.account_id;
      const issued = await call(cp, 'POST', '/api/v1/admin/acceptance-authorizations', {
        token: admin,
        body: {
          account_id: renterId,
          kind: 'withdrawal',
          expires_at: new Date(Date.now() + 600_000).toISOString(),
          reason: 'support case 7',
        },
      });
      expect(issued.status, JSON.stringify(issued.body)).toBe(201);
      const header = { 'ark-acceptance-authorization': issued.body.id };
      const admitted = await call(cp, 'POST', '/api/v1/withdrawals', {
        token: renter,
        headers: header,
        body: { amount_micro: String(2n * USDC), withdrawal_address_id: addressId },
      });
      expect(admitted.status, JSON.stringify(admitted.body)).toBe(202);
      // Single use: the same authorization does not admit a second one.
      const again = await call(cp, 'POST', '/api/v1/withdrawals', {
        token: renter,
        headers: header,
        body: { amount_micro: String(2n * USDC), withdrawal_address_id: addressId },
      });
      expect(again.status).not.toBe(202);
      await waitWithdrawal(cp, anvil, renter, admitted.body.id, 'CONFIRMED');
    } finally {
      expect((await pause(true)).status).toBe(202);
    }
  });

  it('operator commands list the queue and show the wallet; the ledger verifies', async () => {
    // Nine paid: the eight requests of the tests above and the host's payout with the ark CLI.
    const listed = await cli(['withdrawals', 'list', '--state', 'CONFIRMED']);
    expect(listed.withdrawals.length).toBe(9);
    const walletView = await cli(['payouts', 'wallet']);
    expect(walletView).toMatchObject({ address: wallet.address.toLowerCase(), network: 'base', pending_requests: '0', pending_micro: '0' });
    // The low-funds test left 5 USDC whatever was paid before it; the admissions test paid 2 of them.
    expect(BigInt(walletView.usdc_balance_micro)).toBe(3n * USDC);
    const verified = await cli(['ledger', 'verify']);
    expect(verified).toMatchObject({ ok: true, sum_micro: '0' });
  });
});
