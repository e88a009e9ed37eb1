// Renter withdrawals in the cluster bank test, through the load balancer: a stepped-up session per renter (signed in
// again before each request: a step-up is short-lived), one withdrawal address each, withdrawals with an
// Idempotency-Key; afterwards every request must be CONFIRMED and paid exactly once on chain by the payout wallet.
import type { Address } from 'viem';
import type { DepositChain } from '../e2e/deposit-helpers.js';
import { PASSWORD, randomAddress, transfersOnChain } from '../e2e/payout-chain.js';
import type { Anvil } from '../harness/anvil.js';
import { waitFor } from '../harness/processes.js';
import type { WorkloadClient } from './client.js';

export interface Withdrawer {
  email: string;
  to: Address;
  addressId: string;
  withdrawals: Array<{ id: string; amountMicro: bigint }>;
}

async function steppedUp(client: WorkloadClient, email: string): Promise<string> {
  const signIn = await client.call('POST', '/api/v1/auth/sessions', '', { email, password: PASSWORD });
  if (![200, 201].includes(signIn.status)) throw new Error(`sign in: ${signIn.status} ${JSON.stringify(signIn.body)}`);
  const token = signIn.body.session_token as string;
  const stepUp = await client.call('POST', '/api/v1/account/step-up', token, { password: PASSWORD });
  if (stepUp.status !== 200) throw new Error(`step up: ${stepUp.status} ${JSON.stringify(stepUp.body)}`);
  return token;
}

/** A withdrawal address for the renter (an account made with the test password). */
export async function withdrawer(client: WorkloadClient, email: string): Promise<Withdrawer> {
  const token = await steppedUp(client, email);
  const to = randomAddress();
  const added = await client.mutate('POST', '/api/v1/withdrawal-addresses', token, { address: to, label: 'cluster' });
  if (added.status !== 201) throw new Error(`withdrawal address: ${added.status} ${JSON.stringify(added.body)}`);
  return { email, to, addressId: added.body.id as string, withdrawals: [] };
}

/** Requests one withdrawal; answers the amount taken from the balance (0 when refused). */
export async function withdraw(client: WorkloadClient, who: Withdrawer, amountMicro: bigint): Promise<bigint> {
  const token = await steppedUp(client, who.email);
  const answer = await client.mutate('POST', '/api/v1/withdrawals', token, {
    amount_micro: amountMicro.toString(),
    withdrawal_address_id: who.addressId,
  });
  if (answer.status !== 202) return 0n;
  who.withdrawals.push({ id: answer.body.id as string, amountMicro });
  return amountMicro;
}

/** Waits for every withdrawal to be CONFIRMED (mining as it goes); answers what broke the "paid once" promise. */
export async function checkPaidOnce(
  client: WorkloadClient,
  chain: DepositChain,
  anvil: Anvil,
  payer: Address,
  withdrawers: Withdrawer[],
): Promise<string[]> {
  const problems: string[] = [];
  for (const who of withdrawers) {
    if (who.withdrawals.length === 0) continue;
    const token = await steppedUp(client, who.email);
    for (const { id } of who.withdrawals) {
      const state = await waitFor(
        async () => {
          const got = await client.call('GET', `/api/v1/withdrawals/${id}`, token);
          if (['CONFIRMED', 'FAILED'].includes(got.body?.state)) return got.body.state as string;
          await anvil.mine(1);
          return null;
        },
        { timeoutMs: 90_000, intervalMs: 200, description: `withdrawal ${id} final` },
      ).catch(() => 'not final');
      if (state !== 'CONFIRMED') problems.push(`${id}: ${state}`);
    }
    const paid = await transfersOnChain(chain, payer, who.to);
    const asked = who.withdrawals.reduce((sum, w) => sum + w.amountMicro, 0n);
    const sent = paid.reduce((sum, t) => sum + t.value, 0n);
    if (paid.length !== who.withdrawals.length || sent !== asked) {
      problems.push(`${who.email}: ${who.withdrawals.length} withdrawals of ${asked}, ${paid.length} transfers of ${sent} on chain`);
    }
  }
  return problems;
}
