// Paying exactly once across crashes (issue 12): the real control plane is killed with SIGKILL between pinning a
// nonce (the signed transfer stored) and its broadcast, and between the broadcast and its confirmation, over and over,
// on SQLite and on PostgreSQL. The crash points are reached deterministically through ARK_FAULT_EXIT_AT (tests only:
// the process sends itself SIGKILL the first time the payer reaches the named point). After the last restart every
// request is CONFIRMED, the chain holds exactly one USDC Transfer per request (counted from the logs), and the ledger
// verifies. One anvil and one set of accounts per store; each trial is one process start.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { runCommand, spawnProcess } from '../harness/processes.js';
import { type DepositChain, setupDepositChain } from './deposit-helpers.js';
import { type ControlPlane, controlPlaneCli, repoRoot, startControlPlane } from './host-side-helpers.js';
import {
  addWithdrawalAddress,
  call,
  fundedPayoutWallet,
  type PayoutWalletSetup,
  randomAddress,
  randomTag,
  steppedUpSession,
  transfersOnChain,
  USDC,
  waitWithdrawal,
} from './payout-helpers.js';
import { controlPlaneBundle } from '../harness/bundles.js';

/**
 * Trials per store: one process start and one SIGKILL each, alternating the two crash points. CI runs 4 (each point
 * twice); `pnpm bench crash` runs 10 (test/bench/crash-soak.bench.ts sets ARK_CRASH_TRIALS).
 */
const TRIALS = Number(process.env.ARK_CRASH_TRIALS ?? 4);
const POINTS = ['payout.pinned', 'payout.broadcast'] as const;

describe.each(['sqlite', 'postgres'] as const)('payouts across kill -9 on %s', (dialect) => {
  let anvil: Anvil;
  let chain: DepositChain;
  let database: TestDatabase | null = null;
  let wallet: PayoutWalletSetup;
  let env: NodeJS.ProcessEnv;
  let dataDir: string;
  let cp: ControlPlane | null = null;
  let renter = '';
  let renterEmail = '';

  let adminEmail = '';

  /**
   * While the process is down after its crash at payout.pinned (the first trial, nothing left over), the store holds
   * the request SIGNED with its nonce, and a review of it is refused: it is no longer unsigned.
   */
  const expectPinnedAndNotReviewable = async (serveEnv: NodeJS.ProcessEnv, id: string) => {
    const listed = JSON.parse(await controlPlaneCli({ env: serveEnv }, ['withdrawals', 'list', '--state', 'SIGNED'])).withdrawals;
    expect(listed).toEqual([
      expect.objectContaining({ id, state: 'SIGNED', nonce: expect.stringMatching(/^[0-9]+$/), tx_hash: expect.any(String) }),
    ]);
    const refused = await runCommand(
      process.execPath,
      [
        controlPlaneBundle,
        'withdrawals',
        'review',
        '--id',
        id,
        '--decision',
        'reject',
        '--reason',
        'too late to reject',
        '--admin-email',
        adminEmail,
      ],
      { cwd: repoRoot, env: serveEnv, timeoutMs: 60_000 },
    ).then(
      () => null,
      (error: Error) => error.message,
    );
    expect(refused).toContain('no longer unsigned');
  };

  beforeAll(async () => {
    anvil = await startAnvil();
    chain = await setupDepositChain(anvil);
    wallet = await fundedPayoutWallet(chain, anvil, 1_000n * USDC);
    if (dialect === 'postgres') database = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'ark-e2e-payouts-crash-'));
    env = {
      ARK_CHAINS: chain.chainsFile,
      ARK_SECRET_KEY: randomBytes(32).toString('hex'),
      ARK_CHAIN_POLL_INTERVAL_MS: '500',
      ARK_PAYOUT_POLL_INTERVAL_MS: '50',
      ARK_WITHDRAWAL_NEW_ADDRESS_HOLD_S: '0',
      ARK_WITHDRAWAL_REVIEW_FIRST: '0',
      ARK_STEP_UP_TTL_S: '3600',
    };
    cp = await startControlPlane({ databaseUrl: database?.url ?? null, dataDir, env });
    renterEmail = `renter-${randomTag()}@example.test`;
    adminEmail = `admin-${randomTag()}@example.test`;
    [renter] = await Promise.all([
      steppedUpSession(cp, 'renter', renterEmail),
      controlPlaneCli(cp, [
        'accounts',
        'create',
        '--email',
        adminEmail,
        '--role',
        'admin',
        '--password',
        'correct horse battery staple',
        '--verified',
      ]),
    ]);
    await controlPlaneCli(cp, ['ledger', 'credit', '--email', renterEmail, '--amount-micro', String(500n * USDC), '--reason', 'e2e funds']);
  }, 240_000);

  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
    await anvil?.stop();
    await database?.drop();
  });

  it(`pays every request exactly once through ${TRIALS} crashes at both points, and the ledger verifies`, async () => {
    // The requests are made while no payout wallet is configured: they wait, locked, until a payer runs.
    const requests: Array<{ id: string; to: Address; amount: bigint }> = [];
    for (let i = 0; i < TRIALS / 2; i++) {
      const to = randomAddress();
      const addressId = await addWithdrawalAddress(cp as ControlPlane, renter, to);
      const amount = USDC + BigInt(i);
      const requested = await call(cp as ControlPlane, 'POST', '/api/v1/withdrawals', {
        token: renter,
        body: { amount_micro: amount.toString(), withdrawal_address_id: addressId },
      });
      expect(requested.status, JSON.stringify(requested.body)).toBe(202);
      requests.push({ id: requested.body.id, to, amount });
    }
    await cp?.process.stop('SIGTERM');
    const serveEnv = (cp as ControlPlane).env;

    // Each trial starts the payer armed with one crash point and waits for it to kill itself there: a start armed with
    // payout.pinned pins the next request and dies before sending it; the next, armed with payout.broadcast, sends
    // the same stored bytes and dies before recording or confirming them.
    for (let trial = 0; trial < TRIALS; trial++) {
      const point = POINTS[trial % 2] as (typeof POINTS)[number];
      const child = spawnProcess(process.execPath, [controlPlaneBundle, 'serve'], {
        cwd: repoRoot,
        env: { ...serveEnv, ARK_PAYOUT_KEY_FILE: wallet.keyFile, ARK_FAULT_EXIT_AT: point },
        exitSignal: 'SIGKILL',
      });
      const exit = await Promise.race([child.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 60_000))]);
      if (exit === null) await child.stop('SIGKILL');
      expect(exit, `trial ${trial}: the process reached ${point}\n${child.output()}`).toEqual({ code: null, signal: 'SIGKILL' });
      if (trial === 0) await expectPinnedAndNotReviewable(serveEnv, requests[0]?.id as string);
    }

    cp = await startControlPlane({ databaseUrl: database?.url ?? null, dataDir, env: { ...env, ARK_PAYOUT_KEY_FILE: wallet.keyFile } });
    for (const request of requests) await waitWithdrawal(cp, anvil, renter, request.id, 'CONFIRMED', 90_000);
    // More blocks and more payer steps change nothing.
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 1000));

    const transfers = await transfersOnChain(chain, wallet.address);
    expect(transfers).toHaveLength(requests.length);
    for (const request of requests) {
      const paid = transfers.filter((t) => t.to.toLowerCase() === request.to.toLowerCase());
      expect(paid, `request ${request.id}`).toHaveLength(1);
      expect(paid[0]?.value).toBe(request.amount);
      const row = (await call(cp, 'GET', `/api/v1/withdrawals/${request.id}`, { token: renter })).body;
      expect(row.tx_hash).toBe(paid[0]?.txHash);
    }
    const balance = (await call(cp, 'GET', '/api/v1/billing/balance', { token: renter })).body;
    const total = requests.reduce((sum, r) => sum + r.amount, 0n);
    expect(BigInt(balance.available_micro)).toBe(500n * USDC - total);
    const verified = JSON.parse(await controlPlaneCli(cp, ['ledger', 'verify']));
    expect(verified).toMatchObject({ ok: true, sum_micro: '0' });
  }, 600_000);
});
