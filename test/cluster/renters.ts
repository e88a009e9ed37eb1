// The cluster bank test's renters: an account and an API key made with the CLI, a deposit address and a withdrawal
// address asked through the load balancer. Funded later by deposits (bank.ts).
import { randomBytes } from 'node:crypto';
import type { Address } from 'viem';
import { renterKey } from '../e2e/deposit-helpers.js';
import type { ControlPlane } from '../e2e/host-side-helpers.js';
import type { WorkloadClient } from './client.js';
import { type Withdrawer, withdrawer } from './withdrawals.js';

export interface Renter {
  email: string;
  token: string;
  address: Address;
  depositedMicro: bigint;
  /** Paid by x402 top-ups (renter 1 only). */
  toppedUpMicro: bigint;
  withdrawnMicro: bigint;
  withdrawer: Withdrawer;
  jobs: Array<{ jobId: string; quote: any }>;
}

export async function newRenter(cp: ControlPlane, client: WorkloadClient, index: number): Promise<Renter> {
  const email = `bank-${index}-${randomBytes(3).toString('hex')}@example.test`;
  const token = await renterKey(cp, email);
  const answer = await client.call('GET', '/api/v1/billing/deposit-address', token);
  if (answer.status !== 200) throw new Error(`deposit address: ${answer.status} ${JSON.stringify(answer.body)}`);
  const who = await withdrawer(client, email);
  return {
    email,
    token,
    address: answer.body.address,
    depositedMicro: 0n,
    toppedUpMicro: 0n,
    withdrawnMicro: 0n,
    withdrawer: who,
    jobs: [],
  };
}
