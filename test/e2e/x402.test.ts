import { randomBytes } from 'node:crypto';
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { authorizationTypes } from '@x402/evm';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { type Address, getAddress, type Hex } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { waitFor } from '../harness/processes.js';
import { BASE_USDC, type DepositChain, renterKey, setupDepositChain, x402Setup } from './deposit-helpers.js';
import { api, type ControlPlane, controlPlaneCli, startControlPlane } from './host-side-helpers.js';

const USDC = 1_000_000n;
const PATH = '/api/v1/billing/x402/top-up';

describe.each(['sqlite', 'postgres'] as const)('x402 top-ups on %s', (dialect) => {
  let anvil: Anvil;
  let chain: DepositChain;
  let database: TestDatabase | null = null;
  let cp: ControlPlane;
  let token: string;
  const email = `x402-${randomBytes(4).toString('hex')}@example.test`;
  let otherToken: string;
  let payer: PrivateKeyAccount;
  let treasury: Address;
  let gasWallet: Address;
  let cpEnv: NodeJS.ProcessEnv;
  let expectedAvailable = 0n;

  const balance = async (key = token) => {
    const answer = await api(cp.base, 'GET', '/api/v1/billing/balance', { token: key });
    expect(answer.status).toBe(200);
    return BigInt(answer.body.available_micro);
  };
  const treasuryUsdc = () =>
    chain.public.readContract({
      address: BASE_USDC,
      abi: chain.contracts.TestUsdc.abi,
      functionName: 'balanceOf',
      args: [treasury],
    } as never) as Promise<bigint>;
  /** One request with a payment header, as a client repeating "the same request" would send it. */
  const send = async (amountMicro: bigint, header: string | null, key = token, name = 'PAYMENT-SIGNATURE') => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (header !== null) headers[name] = header;
    const response = await fetch(`${cp.base}${PATH}?amount_micro=${amountMicro}`, { method: 'POST', headers });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  };
  /** The official client, with spend controls set: USDC on Base up to 20 USD a payment. */
  const officialClient = () => {
    const client = new x402Client();
    client.register('eip155:8453', new ExactEvmScheme(payer));
    client.setSpendControls({ maxAmountPerPayment: '$20' });
    return client;
  };
  /** Pays with wrapFetchWithPayment; answers the response and the PAYMENT-SIGNATURE header it sent (to repeat it). */
  const payOfficially = async (amountMicro: bigint) => {
    let sent: string | null = null;
    const recording = async (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      sent = request.headers.get('payment-signature') ?? sent;
      return fetch(request);
    };
    const pay = wrapFetchWithPayment(recording as typeof fetch, officialClient());
    const response = await pay(`${cp.base}${PATH}?amount_micro=${amountMicro}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null, header: sent as string | null };
  };
  /** A payment payload built by the official client for `amountMicro`, to alter before sending. */
  const officialPayload = async (amountMicro: bigint) => {
    const required = await send(amountMicro, null);
    expect(required.status).toBe(402);
    const { decodePaymentRequiredHeader } = await import('@x402/core/http');
    return officialClient().createPaymentPayload(decodePaymentRequiredHeader(required.headers.get('payment-required') as string));
  };
  /** Signs an EIP-3009 authorization as USDC's domain on this chain expects it. */
  const signAuthorization = (
    signer: PrivateKeyAccount,
    a: { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex },
  ) =>
    signer.signTypedData({
      domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: BASE_USDC },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: a,
    });
  const withAuthorization = async (
    base: Awaited<ReturnType<typeof officialPayload>>,
    change: Partial<{ to: Address; value: bigint; validAfter: bigint; validBefore: bigint }>,
    signer: PrivateKeyAccount = payer,
  ) => {
    const a = (base.payload as { authorization: Record<string, string> }).authorization;
    const authorization = {
      from: getAddress(a.from as string),
      to: change.to ?? getAddress(a.to as string),
      value: change.value ?? BigInt(a.value as string),
      validAfter: change.validAfter ?? BigInt(a.validAfter as string),
      validBefore: change.validBefore ?? BigInt(a.validBefore as string),
      nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
    };
    const signature = await signAuthorization(signer, authorization);
    const wire = Object.fromEntries(Object.entries(authorization).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]));
    return { header: encodePaymentSignatureHeader({ ...base, payload: { authorization: wire, signature } }), authorization, signature };
  };
  const refusedWith = async (amountMicro: bigint, header: string, reason: string, key = token) => {
    const answer = await send(amountMicro, header, key);
    expect(answer.status).toBe(402);
    expect(answer.body).toMatchObject({ x402Version: 2, error: reason });
    expect(answer.headers.get('payment-required')).toBeTruthy();
  };

  beforeAll(async () => {
    anvil = await startAnvil();
    chain = await setupDepositChain(anvil);
    if (dialect === 'postgres') database = await createTestDatabase();
    // A stranger's wallet holding USDC, our treasury, and our gas wallet with ETH for gas.
    payer = privateKeyToAccount(generatePrivateKey());
    await chain.sendUsdc(payer.address, 100n * USDC);
    const x402 = await x402Setup(chain, anvil);
    ({ treasury, gasWallet } = x402);
    cpEnv = { ...x402.env, ARK_BALANCE_CAP_MICRO: String(40n * USDC) };
    cp = await startControlPlane({ databaseUrl: database?.url ?? null, env: cpEnv });
    token = await renterKey(cp, email);
    otherToken = await renterKey(cp, `x402-other-${randomBytes(4).toString('hex')}@example.test`);
  }, 240_000);

  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
    await anvil?.stop();
    await database?.drop();
  });

  it('answers 402 with the one exact requirement, in the body and base64 in PAYMENT-REQUIRED', async () => {
    const answer = await send(5n * USDC, null);
    expect(answer.status).toBe(402);
    expect(answer.body).toMatchObject({
      x402Version: 2,
      error: 'payment_required',
      accepts: [
        {
          scheme: 'exact',
          network: 'eip155:8453',
          amount: '5000000',
          asset: getAddress(BASE_USDC),
          payTo: getAddress(treasury),
          extra: { name: 'USD Coin', version: '2' },
        },
      ],
    });
    const { decodePaymentRequiredHeader } = await import('@x402/core/http');
    expect(decodePaymentRequiredHeader(answer.headers.get('payment-required') as string)).toEqual(answer.body);
    // Bounds and the cap are refused before anything is signed.
    expect((await send(999_999n, null)).status).toBe(422);
    const overCap = await send(41n * USDC, null);
    expect(overCap.status).toBe(409);
    expect(overCap.body.error.code).toBe('BALANCE_LIMIT_EXCEEDED');
  });

  it('is paid by the official client as a stranger would, credited exactly once after finality, and a repeat answers the first result', async () => {
    const paid = await payOfficially(5n * USDC);
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ state: 'PENDING_FINALITY', amount_micro: '5000000', payer: payer.address, network: 'base' });
    expect(paid.body.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(Number.isInteger(paid.body.log_index)).toBe(true);
    for (const name of ['payment-response', 'x-payment-response']) {
      expect(decodePaymentResponseHeader(paid.headers.get(name) as string)).toMatchObject({
        success: true,
        transaction: paid.body.tx_hash,
        network: 'eip155:8453',
        payer: payer.address,
      });
    }
    expect(await treasuryUsdc()).toBe(5n * USDC);
    // Not final yet: nothing credited. Two blocks later it is final, and credited once.
    expect(await balance()).toBe(expectedAvailable);
    await anvil.mine(2);
    const confirmed = await waitFor(
      async () => {
        const again = await send(5n * USDC, paid.header);
        return again.body?.state === 'CONFIRMED' ? again : null;
      },
      { timeoutMs: 30_000, intervalMs: 100, description: 'the top-up CONFIRMED' },
    );
    expectedAvailable += 5n * USDC;
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ intent_id: paid.body.intent_id, tx_hash: paid.body.tx_hash, credited_micro: '5000000' });
    // The balance lists it among the top-ups, with its state, network and transaction.
    const history = (await api(cp.base, 'GET', '/api/v1/billing/balance', { token })).body.top_ups;
    expect(history.items.find((item: { intent_id: string }) => item.intent_id === paid.body.intent_id)).toMatchObject({
      state: 'CONFIRMED',
      network: 'base',
      tx_hash: paid.body.tx_hash,
      credited_micro: '5000000',
      payer: payer.address,
    });
    // The operator sees it too, beside the account's chain deposits.
    const listed = JSON.parse(await controlPlaneCli(cp, ['deposits', 'list', '--email', email]));
    expect(listed.deposits).toEqual([]);
    expect(listed.top_ups.find((item: { intent_id: string }) => item.intent_id === paid.body.intent_id)).toMatchObject({
      state: 'CONFIRMED',
      credited_micro: '5000000',
    });
    // The same header again, under the v1 name too: the same result, and still one credit.
    const repeated = await send(5n * USDC, paid.header, token, 'X-PAYMENT');
    expect(repeated.body).toEqual(confirmed.body);
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await balance()).toBe(expectedAvailable);
    expect(await treasuryUsdc()).toBe(5n * USDC);
    expect(JSON.parse(await controlPlaneCli(cp, ['ledger', 'verify'])).ok).toBe(true);
  });

  it('answers 202 SETTLING while the settlement is unmined, the same header again gets the same transaction, then 200', async () => {
    await anvil.rpc('evm_setAutomine', [false]);
    try {
      const paid = await payOfficially(3n * USDC);
      expect(paid.status).toBe(202);
      expect(paid.body).toMatchObject({ state: 'SETTLING' });
      expect(paid.body.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
      const again = await send(3n * USDC, paid.header);
      expect(again.status).toBe(202);
      expect(again.body.tx_hash).toBe(paid.body.tx_hash);
      await anvil.mine(1);
      const mined = await send(3n * USDC, paid.header);
      expect(mined.status).toBe(200);
      expect(mined.body).toMatchObject({ state: 'PENDING_FINALITY', tx_hash: paid.body.tx_hash });
      await anvil.mine(2);
      await waitFor(async () => (await send(3n * USDC, paid.header)).body?.state === 'CONFIRMED', {
        timeoutMs: 30_000,
        intervalMs: 100,
        description: 'the second top-up CONFIRMED',
      });
      expectedAvailable += 3n * USDC;
      expect(await balance()).toBe(expectedAvailable);
      expect(await treasuryUsdc()).toBe(8n * USDC);
    } finally {
      await anvil.rpc('evm_setAutomine', [true]);
    }
  });

  it('refuses expired, wrong-amount, wrong-recipient, forged and already-used authorizations with 402 and the reason, crediting nothing', async () => {
    const base = await officialPayload(2n * USDC);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const treasuryBefore = await treasuryUsdc();

    await refusedWith(
      2n * USDC,
      (await withAuthorization(base, { validAfter: 0n, validBefore: now - 10n })).header,
      'authorization_expired',
    );
    // Signed for 2 USDC, presented for 3.
    await refusedWith(3n * USDC, encodePaymentSignatureHeader(base), 'invalid_amount');
    await refusedWith(2n * USDC, (await withAuthorization(base, { value: 3n * USDC })).header, 'invalid_amount');
    await refusedWith(
      2n * USDC,
      (await withAuthorization(base, { to: privateKeyToAccount(generatePrivateKey()).address })).header,
      'invalid_recipient',
    );
    await refusedWith(
      2n * USDC,
      (await withAuthorization(base, {}, privateKeyToAccount(generatePrivateKey()))).header,
      'invalid_signature',
    );

    // Used on chain by the payer itself before it is presented.
    const used = await withAuthorization(base, {});
    const { r, s, v } = await import('viem').then((viem) => viem.parseSignature(used.signature));
    await chain.wallet.writeContract({
      address: BASE_USDC,
      abi: chain.contracts.TestUsdc.abi,
      functionName: 'transferWithAuthorization',
      args: [
        used.authorization.from,
        used.authorization.to,
        used.authorization.value,
        used.authorization.validAfter,
        used.authorization.validBefore,
        used.authorization.nonce,
        Number(v),
        r,
        s,
      ],
      account: chain.funder,
      chain: null,
    } as never);
    await waitFor(
      async () =>
        (await chain.public.readContract({
          address: BASE_USDC,
          abi: chain.contracts.TestUsdc.abi,
          functionName: 'authorizationState',
          args: [used.authorization.from, used.authorization.nonce],
        } as never)) === true,
      { timeoutMs: 10_000, intervalMs: 50, description: 'the authorization used on chain' },
    );
    await refusedWith(2n * USDC, used.header, 'authorization_already_used');
    // A settled payment presented by another account is not that account's top-up.
    const settled = await payOfficially(2n * USDC);
    expect(settled.status).toBe(200);
    await refusedWith(2n * USDC, settled.header as string, 'authorization_already_used', otherToken);

    await anvil.mine(2);
    await waitFor(async () => (await send(2n * USDC, settled.header)).body?.state === 'CONFIRMED', {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the settled top-up CONFIRMED',
    });
    expectedAvailable += 2n * USDC;
    // Only the one good payment (and the payer's own on-chain transfer) reached the treasury; only the good one is credited.
    expect(await treasuryUsdc()).toBe(treasuryBefore + 4n * USDC);
    expect(await balance()).toBe(expectedAvailable);
    expect(await balance(otherToken)).toBe(0n);
    expect(JSON.parse(await controlPlaneCli(cp, ['ledger', 'verify'])).ok).toBe(true);
  });

  it('sends a settlement signed before a crash again after the restart: one transaction, credited once', async () => {
    await anvil.rpc('evm_setAutomine', [false]);
    try {
      const paid = await payOfficially(4n * USDC);
      expect(paid.status).toBe(202);
      const txHash = paid.body.tx_hash as Hex;
      const sentBefore = await chain.public.getTransactionCount({ address: gasWallet, blockTag: 'latest' });
      // Killed with the transaction signed and stored; the node never got it (as if the crash came before the broadcast).
      await cp.process.stop('SIGKILL');
      await anvil.rpc('anvil_dropTransaction', [txHash]);
      expect(await anvil.rpc('eth_getTransactionByHash', [txHash])).toBeNull();
      cp = await startControlPlane({ databaseUrl: database?.url ?? null, dataDir: cp.dataDir, env: cpEnv });
      // The settlement worker finds the intent and sends the same signed bytes (the same hash), not a new transaction.
      await waitFor(async () => (await anvil.rpc('eth_getTransactionByHash', [txHash])) !== null, {
        timeoutMs: 30_000,
        intervalMs: 100,
        description: 'the stored settlement sent again',
      });
      await anvil.mine(1);
      await anvil.mine(2);
      const confirmed = await waitFor(
        async () => {
          const again = await send(4n * USDC, paid.header);
          return again.body?.state === 'CONFIRMED' ? again : null;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: 'the recovered top-up CONFIRMED' },
      );
      expect(confirmed.body.tx_hash).toBe(txHash);
      expect(await chain.public.getTransactionCount({ address: gasWallet, blockTag: 'latest' })).toBe(sentBefore + 1);
      expectedAvailable += 4n * USDC;
      expect(await balance()).toBe(expectedAvailable);
      expect(JSON.parse(await controlPlaneCli(cp, ['ledger', 'verify'])).ok).toBe(true);
    } finally {
      await anvil.rpc('evm_setAutomine', [true]);
    }
  }, 120_000);

  it('answers 503 ADMISSIONS_PAUSED while admissions are paused, before asking for a payment, and a payment signed before the pause settles nothing; it goes through after the resume', async () => {
    const adminEmail = `x402-admin-${randomBytes(4).toString('hex')}@example.test`;
    await controlPlaneCli(cp, [
      'accounts',
      'create',
      '--email',
      adminEmail,
      '--role',
      'admin',
      '--password',
      'correct horse battery staple',
      '--verified',
    ]);
    // A payment the official client signed just before the pause (from the 402 it got while admission was open).
    const signed = encodePaymentSignatureHeader(await officialPayload(1n * USDC));
    await controlPlaneCli(cp, ['admissions', 'pause', '--email', adminEmail, '--reason', 'x402 e2e: paused']);
    const treasuryBefore = await treasuryUsdc();
    // Paused: the official client gets 503 at once, not a 402, so it signs nothing.
    const asked = await payOfficially(1n * USDC);
    expect(asked.status).toBe(503);
    expect(asked.body.error).toMatchObject({ code: 'ADMISSIONS_PAUSED', retryable: true });
    expect(asked.header).toBeNull();
    // The payment signed before the pause is refused the same way, and nothing moves on chain.
    const paused = await send(1n * USDC, signed);
    expect(paused.status).toBe(503);
    expect(paused.body.error).toMatchObject({ code: 'ADMISSIONS_PAUSED', retryable: true });
    await anvil.mine(3);
    expect(await treasuryUsdc()).toBe(treasuryBefore);
    expect(await balance()).toBe(expectedAvailable);

    await controlPlaneCli(cp, ['admissions', 'resume', '--email', adminEmail, '--reason', 'x402 e2e: resumed']);
    const resumed = await send(1n * USDC, signed);
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ state: 'PENDING_FINALITY', amount_micro: '1000000' });
    await anvil.mine(2);
    await waitFor(async () => (await send(1n * USDC, signed)).body?.state === 'CONFIRMED', {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the top-up after the resume CONFIRMED',
    });
    expectedAvailable += 1n * USDC;
    expect(await treasuryUsdc()).toBe(treasuryBefore + 1n * USDC);
    expect(await balance()).toBe(expectedAvailable);
    expect(JSON.parse(await controlPlaneCli(cp, ['ledger', 'verify'])).ok).toBe(true);
  }, 240_000);
});
