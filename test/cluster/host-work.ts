// The host side of the cluster bank test's workload, through the load balancer: renters rent the simulated agents'
// machines (sim-jobs.ts meters them), and the host is paid out its matured earnings with the payout wallet. The checks:
// every simulated meter receipt counted once (accepted runtime equals what the agent sent, each meter_seq once, all
// acknowledged), and the host's ledger accounts equal its earnings less its payouts.
import { chargesFor } from '@ark/control-plane/domain/metering/charges';
import { waitFor } from '../harness/processes.js';
import type { Answer, WorkloadClient } from './client.js';
import type { SimAgents } from './sim-agents.js';
import { type Withdrawer, withdraw } from './withdrawals.js';

export interface RentedJob {
  jobId: string;
  quote: any;
}

export interface JobRenter {
  token: string;
  jobs: RentedJob[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The simulated machines' offer ids, once listed. */
export async function simOffers(client: WorkloadClient, token: string, sims: SimAgents): Promise<string[]> {
  return waitFor(
    async () => {
      const listed = await client.call('GET', '/api/v1/offers?limit=100', token);
      const ids = sims.machineIds.map((id) => (listed.body?.items as any[] | undefined)?.find((o) => o.machine_id === id)?.offer_id);
      return ids.every((id) => typeof id === 'string') ? (ids as string[]) : null;
    },
    { timeoutMs: 30_000, intervalMs: 300, description: 'the simulated machines listed' },
  );
}

/** One renting loop on one simulated machine: reserve, run a few seconds metered, stop, wait for the end. */
export async function simJobLoop(input: {
  client: WorkloadClient;
  sims: SimAgents;
  offerId: string;
  imageDigest: string;
  sshPublicKey: string;
  renters: JobRenter[];
  random: () => number;
  running: () => boolean;
}): Promise<void> {
  const { client, sims } = input;
  for (let n = 0; input.running(); n++) {
    const renter = input.renters[(n + 1) % input.renters.length] as JobRenter;
    const quote = await client.mutate('POST', '/api/v1/quotes', renter.token, {
      offer_id: input.offerId,
      gpu_count: 1,
      duration_limit_s: 600,
      budget_micro: '2000000',
      image_digest: input.imageDigest,
    });
    if (quote.status !== 201) {
      await sleep(500);
      continue;
    }
    const reserved: Answer = await client.mutate('POST', '/api/v1/jobs', renter.token, {
      quote_id: quote.body.quote_id,
      ssh_public_keys: [input.sshPublicKey],
    });
    if (reserved.status !== 202) {
      await sleep(500);
      continue;
    }
    const jobId = reserved.body.job_id as string;
    renter.jobs.push({ jobId, quote: quote.body });
    const view = async () => (await client.call('GET', `/api/v1/jobs/${jobId}`, renter.token)).body;
    const started = await waitFor(
      async () => {
        const job = await view();
        return ['RUNNING', 'STOPPING', 'CLOSED', 'FAILED'].includes(job.state) ? job : null;
      },
      { timeoutMs: 120_000, intervalMs: 200, description: `simulated job ${jobId} running` },
    );
    if (started.meter_started_at !== null) sims.jobs.running(jobId, started.meter_started_at);
    await sleep(2_000 + input.random() * 4_000);
    await client.mutate('POST', `/api/v1/jobs/${jobId}/stop`, renter.token, { reason: 'bank test' });
    await waitFor(async () => ['CLOSED', 'FAILED'].includes((await view()).state), {
      timeoutMs: 120_000,
      intervalMs: 300,
      description: `simulated job ${jobId} closed`,
    });
    sims.jobs.finished(jobId);
  }
}

/** Pays the host out now and then: half its payable earnings once above the minimum. */
export async function payoutLoop(input: {
  client: WorkloadClient;
  host: Withdrawer;
  hostToken: string;
  minMicro: bigint;
  random: () => number;
  running: () => boolean;
  paid: { micro: bigint };
}): Promise<void> {
  while (input.running()) {
    await sleep(4_000 + input.random() * 4_000);
    if (!input.running()) return;
    const earnings = await input.client.call('GET', '/api/v1/hosts/earnings', input.hostToken);
    const payable = BigInt(earnings.body?.payable_micro ?? '0');
    if (payable / 2n < input.minMicro) continue;
    input.paid.micro += await withdraw(input.client, input.host, payable / 2n);
  }
}

/** Every simulated job: accepted runtime equals what the agent sent (each meter_seq once, all acknowledged). */
export async function checkSimReceipts(client: WorkloadClient, sims: SimAgents, renters: JobRenter[]): Promise<string[]> {
  const problems: string[] = [];
  await waitFor(() => sims.unacknowledged() === 0, { timeoutMs: 30_000, description: 'every simulated message acknowledged' }).catch(() =>
    problems.push(`${sims.unacknowledged()} simulated messages never acknowledged`),
  );
  for (const renter of renters) {
    for (const { jobId } of renter.jobs) {
      const sent = sims.jobs.sent(jobId);
      if (sent === null) continue;
      const job = (await client.call('GET', `/api/v1/jobs/${jobId}`, renter.token)).body;
      const accepted = Number(job.accepted_runtime_ms);
      // A job that failed (its machine lost) stops counting where the control plane stopped metering it.
      const exact = job.state === 'CLOSED';
      if (exact ? accepted !== sent.runtimeMs : accepted > sent.runtimeMs) {
        problems.push(`${jobId} (${job.state}): accepted ${accepted} ms, the agent sent ${sent.runtimeMs} ms in ${sent.receipts} receipts`);
      }
    }
  }
  return problems;
}

/** The host's earnings from every job (each job's host share of its charges), as the workload computes them. */
export async function hostEarnings(client: WorkloadClient, renters: JobRenter[]): Promise<bigint> {
  let earned = 0n;
  for (const renter of renters) {
    for (const { jobId, quote } of renter.jobs) {
      const job = (await client.call('GET', `/api/v1/jobs/${jobId}`, renter.token)).body;
      earned += chargesFor(
        { machineRateMicroPerHour: BigInt(quote.machine_rate_micro_per_hour), platformFeeBps: BigInt(quote.platform_fee_bps) },
        BigInt(job.funded_budget_micro),
        BigInt(job.accepted_runtime_ms),
      ).hostMicro;
    }
  }
  return earned;
}
