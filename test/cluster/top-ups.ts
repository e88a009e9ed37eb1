// x402 top-ups in the cluster bank test: one renter pays with the official x402 client (a wallet of its own holding
// USDC on anvil) through the load balancer. A lost answer (a replica killed mid-request, a PostgreSQL restart) is
// resent with the same PAYMENT-SIGNATURE header, as a client repeating the request would; the header is the top-up's
// identity, so it settles and credits once whatever replica answers. Afterwards every top-up must be CONFIRMED with
// its amount credited once, and the treasury must hold exactly what was paid.
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { BASE_USDC, type DepositChain } from '../e2e/deposit-helpers.js';
import type { Anvil } from '../harness/anvil.js';
import { waitFor } from '../harness/processes.js';

const PATH = '/api/v1/billing/x402/top-up';

export interface TopUps {
  payer: Address;
  paid: Array<{ amountMicro: bigint; header: string; intentId: string | null }>;
  refused?: number;
  /** Requests resent with the same header after a lost or retryable answer. */
  resent?: number;
}

export async function x402Payer(chain: DepositChain, usdc: bigint): Promise<{ account: ReturnType<typeof privateKeyToAccount> }> {
  const account = privateKeyToAccount(generatePrivateKey());
  await chain.sendUsdc(account.address, usdc);
  return { account };
}

async function send(lbBase: string, token: string, amountMicro: bigint, header: string) {
  const response = await fetch(`${lbBase}${PATH}?amount_micro=${amountMicro}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'PAYMENT-SIGNATURE': header },
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let body: any = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // HAProxy's own 503 page.
  }
  return { status: response.status, body };
}

/**
 * Pays one top-up through the load balancer; answers the amount that the renter's balance will show once final
 * (0 when the payment was refused before anything was signed or settled).
 */
export async function topUp(
  lbBase: string,
  token: string,
  account: ReturnType<typeof privateKeyToAccount>,
  amountMicro: bigint,
  topUps: TopUps,
): Promise<bigint> {
  const client = new x402Client();
  client.register('eip155:8453', new ExactEvmScheme(account));
  client.setSpendControls({ maxAmountPerPayment: '$20' });
  let header: string | null = null;
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    header = request.headers.get('payment-signature') ?? header;
    return fetch(request);
  };
  let answer: { status: number; body: any } | null = null;
  try {
    const response = await wrapFetchWithPayment(recording as typeof fetch, client)(`${lbBase}${PATH}?amount_micro=${amountMicro}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    });
    const text = await response.text();
    answer = { status: response.status, body: text === '' ? null : JSON.parse(text) };
  } catch {
    // A fault took the answer (or the 402 before it): resent below with the same header when one was signed.
  }
  if (header === null) return 0n;
  const signed: string = header;
  // The same header again until the answer is final for this request: settled (200) or refused (402/4xx).
  for (let attempt = 0; answer === null || answer.status >= 500 || answer.status === 202; attempt++) {
    if (attempt > 120) throw new Error(`x402 top-up: no final answer (${JSON.stringify(answer)})`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    topUps.resent = (topUps.resent ?? 0) + 1;
    answer = await send(lbBase, token, amountMicro, signed).catch(() => null);
  }
  if (answer.status !== 200) {
    topUps.refused = (topUps.refused ?? 0) + 1;
    return 0n;
  }
  topUps.paid.push({ amountMicro, header: signed, intentId: answer.body?.intent_id ?? null });
  return amountMicro;
}

/** Waits for every top-up to be CONFIRMED (mining as it goes); answers what broke "credited once". */
export async function checkTopUps(
  lbBase: string,
  token: string,
  chain: DepositChain,
  anvil: Anvil,
  treasury: Address,
  topUps: TopUps,
): Promise<string[]> {
  const problems: string[] = [];
  for (const top of topUps.paid) {
    const confirmed = await waitFor(
      async () => {
        const again = await send(lbBase, token, top.amountMicro, top.header).catch(() => null);
        if (again?.body?.state === 'CONFIRMED') return again.body;
        await anvil.mine(1);
        return null;
      },
      { timeoutMs: 60_000, intervalMs: 200, description: 'the top-up CONFIRMED' },
    ).catch(() => null);
    if (confirmed === null) problems.push(`top-up ${top.intentId}: not CONFIRMED`);
    else if (BigInt(confirmed.credited_micro) !== top.amountMicro)
      problems.push(`top-up ${top.intentId}: credited ${confirmed.credited_micro} of ${top.amountMicro}`);
  }
  const held = (await chain.public.readContract({
    address: BASE_USDC,
    abi: chain.contracts.TestUsdc.abi,
    functionName: 'balanceOf',
    args: [treasury],
  } as never)) as bigint;
  const paid = topUps.paid.reduce((sum, t) => sum + t.amountMicro, 0n);
  if (held !== paid) problems.push(`the treasury holds ${held}, the renter paid ${paid} in ${topUps.paid.length} top-ups`);
  return problems;
}
