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
    const paid = await withdraw(input.client, input.host, payable / 2n);
    input.paid.micro += paid;
  }
}

/** Every simulated job: accepted runtime equals what the agent sent (each meter_seq once, all acknowledged). */
export async function checkSimReceipts(
  client: WorkloadClient,
  sims: SimAgents,
  renters: JobRenter[],
): Promise<{ problems: string[]; refusedBy: Record<string, number>; refusedJobs: string[] }> {
  const problems: string[] = [];
  /** A job with refusals, and its events (why the job was not metering). */
  const refusedJobs: string[] = [];
  const refusedBy: Record<string, number> = {};
  await waitFor(() => sims.unacknowledged() === 0, { timeoutMs: 30_000, description: 'every simulated message acknowledged' }).catch(() =>
    problems.push(`${sims.unacknowledged()} simulated messages never acknowledged`),
  );
  for (const renter of renters) {
    for (const { jobId } of renter.jobs) {
      const sent = sims.jobs.sent(jobId);
      if (sent === null) continue;
      const job = (await client.call('GET', `/api/v1/jobs/${jobId}`, renter.token)).body;
      const accepted = Number(job.accepted_runtime_ms);
      const events = ((await client.call('GET', `/api/v1/jobs/${jobId}/events?limit=100`, renter.token)).body?.items ?? []) as any[];
      const refusals = events.filter((e) => e.kind === 'receipt_refused');
      for (const e of refusals) refusedBy[e.data?.reason] = (refusedBy[e.data?.reason] ?? 0) + 1;
      if (refusals.length > 0) {
        const story = events
          .map((e) => (e.kind === 'receipt_refused' ? `refused:${e.data?.reason}` : e.kind === 'state_changed' ? `>${e.data?.to}` : e.kind))
          .join(',');
        refusedJobs.push(`${jobId.slice(0, 8)} ${story}`);
      }
      // Each receipt sent is either refused (an event says why) or counted, once: accepted runtime is exactly the
      // runtime of the receipts not refused. A refusal is legitimate for a stale fence, for a job not metering (the
      // machine lost: RECONCILING, whose gap is never charged; or the job over), and for a seq gap behind a
      // not_metering refusal of the same fence (a refused receipt leaves the sequence where it was).
      const key = (fence: unknown, seq: unknown) => `${fence}/${seq}`;
      const refusedKeys = new Set(refusals.map((e) => key(e.data?.fence, e.data?.meter_seq)));
      const stuck = new Set(refusals.filter((e) => e.data?.reason === 'not_metering').map((e) => String(e.data?.fence)));
      const lost = refusals.filter(
        (e) =>
          !['stale_fence', 'not_metering'].includes(e.data?.reason) && !(e.data?.reason === 'seq_gap' && stuck.has(String(e.data?.fence))),
      );
      const counted = sent.receipts.filter((r) => !refusedKeys.has(key(r.fence, r.seq))).reduce((sum, r) => sum + r.runtimeMs, 0);
      if (accepted !== counted || lost.length > 0 || sent.unacked > 0) {
        const states = events.filter((e) => e.kind !== 'receipt_refused').map((e) => `${e.kind}@${String(e.at).slice(17, 23)}`);
        const refused = refusals.map((e) => JSON.stringify(e.data));
        problems.push(
          `${jobId} (${job.state}): accepted ${accepted} ms, receipts not refused ${counted} ms, sent ${sent.runtimeMs} ms in ${sent.receipts.length} receipts, ${sent.unacked} unacknowledged (${sent.detail}); meter_started_at ${job.meter_started_at}; events ${states.join(' ')}; refused: ${refused.join(' ')}`,
        );
      }
    }
  }
  return { problems, refusedBy, refusedJobs };
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
