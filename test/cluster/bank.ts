// The cluster bank test (issue 26): the deploy/cluster topology on this machine (cluster.ts), renters funded by USDC
// deposits on anvil, a real `ark-agent run` on a private dockerd paired through the load balancer, and a workload that
// only talks to the load balancer (quotes, reservations, budget extensions, stops, each mutation with an
// Idempotency-Key) while faults run on a seeded schedule (faults.ts). When the faults stop and the system settles,
// the invariants are checked; each one's result is in the report. Used by cluster.test.ts (short form) and
// test/bench/cluster.bench.ts (long form).
import { randomBytes } from 'node:crypto';
import { chargesFor } from '@ark/control-plane/domain/metering/charges';
import pg from 'pg';
import { randomDepositXpub, setupDepositChain, x402Setup } from '../e2e/deposit-helpers.js';
import { controlPlaneCli } from '../e2e/host-side-helpers.js';
import { fundedPayoutWallet, USDC } from '../e2e/payout-chain.js';
import { jobContainers, RENTAL_CP_ENV, RentalSite, startDockerWorld } from '../e2e/rental-helpers.js';
import { startAnvil } from '../harness/anvil.js';
import { waitFor } from '../harness/processes.js';
import { WorkloadClient } from './client.js';
import { Cluster } from './cluster.js';
import { type InjectedFault, injectFault, planFaults, prng } from './faults.js';
import { newRenter, type Renter } from './renters.js';
import { SimAgents } from './sim-agents.js';
import { checkPaidOnce, withdraw, withdrawer } from './withdrawals.js';
import { checkTopUps, type TopUps, topUp, x402Payer } from './top-ups.js';
import { checkSimReceipts, hostEarnings, payoutLoop, simJobLoop, simOffers } from './host-work.js';

export interface BankOptions {
  seed?: number;
  /** Rounds of faults, each every kind once (short form 1). */
  rounds?: number;
  renters?: number;
  pauseMs?: number;
  gapMs?: [number, number];
  /** Simulated agents on the real signed channel beside the real one. */
  simAgents?: number;
  /** Renting loops on the simulated machines (one machine each). */
  simJobLoops?: number;
  /** An agent must be back on a channel within this after each fault. */
  reconnectBoundMs?: number;
  log?: (line: string) => void;
}

export interface Invariant {
  name: string;
  ok: boolean;
  detail: string;
}

export interface BankReport {
  seed: number;
  faults: InjectedFault[];
  requests: number;
  retries: number;
  mutations: number;
  statuses: Record<string, number>;
  jobs: number;
  deposits: number;
  invariants: Invariant[];
}

const DEPOSIT_MICRO = 20n * USDC;
const PAYOUT_MIN_MICRO = 10_000n;

/** The index of the replica holding a lease (its owner name carries the holder's PID: store/leases.ts). */
async function leaseHolder(cluster: Cluster, table: 'chain_watch_state' | 'payout_wallet_state'): Promise<number | null> {
  const db = new pg.Client({ connectionString: cluster.postgres.url });
  await db.connect();
  try {
    const row = (await db.query(`select lease_owner from ${table} where lease_owner is not null limit 1`)).rows[0];
    const pid = Number(String(row?.lease_owner ?? '').split('/')[1]);
    const index = cluster.replicas.findIndex((r) => r.cp?.process.pid === pid);
    return index < 0 ? null : index;
  } finally {
    await db.end();
  }
}

export async function runBank(options: BankOptions = {}): Promise<BankReport> {
  const seed = options.seed ?? Number.parseInt(randomBytes(4).toString('hex'), 16);
  const log = options.log ?? ((line: string) => process.stdout.write(`[cluster] ${line}\n`));
  log(`seed ${seed} (ARK_CLUSTER_SEED=${seed} replays the fault schedule)`);
  const random = prng(seed ^ 0x5eed);
  const startedAt = Date.now();
  // The engine starts beside the chain and the cluster (dockerd and the image push are mostly waiting).
  const worldStart = startDockerWorld();
  worldStart.catch(() => undefined); // handled where awaited: no unhandled rejection while the chain starts
  const stopWorld = async () => (await worldStart.catch(() => undefined))?.stop();
  const anvil = await startAnvil().catch(async (error) => {
    await stopWorld();
    throw error;
  });
  let cluster: Cluster | undefined;
  let site: RentalSite | undefined;
  let sims: SimAgents | undefined;
  try {
    const chain = await setupDepositChain(anvil);
    const wallet = await fundedPayoutWallet(chain, anvil, 1_000n * USDC);
    const x402 = await x402Setup(chain, anvil);
    const x402Wallet = await x402Payer(chain, 200n * USDC);
    cluster = await Cluster.start({
      ...x402.env,
      ...RENTAL_CP_ENV,
      ARK_CHAINS: chain.chainsFile,
      ARK_DEPOSIT_XPUB: randomDepositXpub(),
      ARK_SECRET_KEY: randomBytes(32).toString('hex'),
      ARK_CHAIN_POLL_INTERVAL_MS: '100',
      ARK_BALANCE_CAP_MICRO: String(1_000n * USDC),
      ARK_PAYOUT_KEY_FILE: wallet.keyFile,
      ARK_PAYOUT_POLL_INTERVAL_MS: '100',
      ARK_PAYOUT_REPLACE_AFTER_S: '2',
      ARK_WITHDRAWAL_REVIEW_ABOVE_MICRO: String(1_000n * USDC),
      ARK_WITHDRAWAL_NEW_ADDRESS_HOLD_S: '0',
      ARK_WITHDRAWAL_REVIEW_FIRST: '0',
      // Host earnings are payable at once and small payouts allowed: the host is paid out during the faults.
      ARK_EARNINGS_MATURITY_S: '0',
      ARK_WITHDRAWAL_MIN_MICRO: String(PAYOUT_MIN_MICRO),
      // One host pairs the real agent and the simulated ones.
      ARK_NEW_HOST_MACHINE_CAP: '100',
    });
    log(`start-up: the cluster answers through HAProxy at ${Date.now() - startedAt} ms`);
    const cp = cluster.asControlPlane();
    const client = new WorkloadClient(cluster.lbBase);
    const world = await worldStart;
    // The renters (CLI runs) are made beside the agent's pairing, which mostly waits on heartbeats. Settled, not raced:
    // a site that started is stopped below whatever else failed.
    const [siteMade, rentersMade] = await Promise.allSettled([
      RentalSite.start('postgres', world, { controlPlane: cp, agentBase: cluster.agentBase }),
      Promise.all(Array.from({ length: options.renters ?? 2 }, (_, i) => newRenter(cp, client, i))),
    ]);
    if (siteMade.status === 'fulfilled') site = siteMade.value;
    for (const made of [siteMade, rentersMade]) if (made.status === 'rejected') throw made.reason;
    const renters = (rentersMade as PromiseFulfilledResult<Renter[]>).value;
    const c = cluster;
    const s = (siteMade as PromiseFulfilledResult<RentalSite>).value;
    sims = new SimAgents(cluster.agentBase);
    await sims.enroll(client, s.hostToken, options.simAgents ?? 4);
    await sims.start();
    const simulated = sims;

    // The renters funded by deposits, through the load balancer.
    const deposit = async (renter: Renter) => {
      await chain.sendUsdc(renter.address, DEPOSIT_MICRO);
      await anvil.mine(2);
      renter.depositedMicro += DEPOSIT_MICRO;
    };
    for (const renter of renters) await deposit(renter);
    const available = async (renter: Renter) => {
      const answer = await client.call('GET', '/api/v1/billing/balance?limit=100', renter.token);
      return BigInt(answer.body.available_micro) + BigInt(answer.body.held_micro);
    };
    await waitFor(async () => (await Promise.all(renters.map(available))).every((v, i) => v === renters[i]?.depositedMicro), {
      timeoutMs: 60_000,
      description: 'the first deposits credited',
    });
    log(`start-up: agents paired and renters funded at ${Date.now() - startedAt} ms`);

    // The workload: one job at a time on the real machine (rented whole), quotes from every renter, deposits now and then.
    let running = true;
    const workloadErrors: string[] = [];
    const jobLoop = async () => {
      for (let n = 0; running; n++) {
        const renter = renters[n % renters.length] as Renter;
        const quote = await client.mutate('POST', '/api/v1/quotes', renter.token, {
          offer_id: s.offerId,
          gpu_count: 1,
          duration_limit_s: 600,
          budget_micro: String(2n * USDC),
          image_digest: s.world.image.digestRef,
        });
        if (quote.status !== 201) {
          await new Promise((resolve) => setTimeout(resolve, 500));
          continue;
        }
        const reserved = await client.mutate('POST', '/api/v1/jobs', renter.token, {
          quote_id: quote.body.quote_id,
          ssh_public_keys: [s.ssh.publicKey],
        });
        if (reserved.status !== 202) {
          workloadErrors.push(`reserve: ${reserved.status} ${JSON.stringify(reserved.body)}`);
          await new Promise((resolve) => setTimeout(resolve, 500));
          continue;
        }
        const jobId = reserved.body.job_id as string;
        renter.jobs.push({ jobId, quote: quote.body });
        const view = async () => (await client.call('GET', `/api/v1/jobs/${jobId}`, renter.token)).body;
        await waitFor(async () => ['RUNNING', 'CLOSED', 'FAILED'].includes((await view()).state), {
          timeoutMs: 120_000,
          description: `job ${jobId} running`,
        });
        await new Promise((resolve) => setTimeout(resolve, 1_000 + random() * 3_000));
        const job = await view();
        if (job.state === 'RUNNING') {
          await client.mutate('POST', `/api/v1/jobs/${jobId}/budget-extension`, renter.token, {
            additional_budget_micro: String(USDC / 2n),
            new_duration_limit_s: job.duration_limit_s,
            expected_job_version: job.job_version,
            expected_budget_version: job.budget_version,
          });
          await new Promise((resolve) => setTimeout(resolve, 1_000 + random() * 3_000));
        }
        await client.mutate('POST', `/api/v1/jobs/${jobId}/stop`, renter.token, { reason: 'bank test' });
        await waitFor(async () => ['CLOSED', 'FAILED'].includes((await view()).state), {
          timeoutMs: 120_000,
          description: `job ${jobId} closed`,
        });
      }
    };
    const depositLoop = async () => {
      while (running) {
        await new Promise((resolve) => setTimeout(resolve, 4_000 + random() * 4_000));
        if (running) await deposit(renters[Math.floor(random() * renters.length)] as Renter);
      }
    };
    const withdrawLoop = async () => {
      while (running) {
        await new Promise((resolve) => setTimeout(resolve, 5_000 + random() * 5_000));
        const renter = renters[Math.floor(random() * renters.length)] as Renter;
        // Read the total after the await: `x += await f()` would add to a value read before (a race with other loops).
        const taken = running ? await withdraw(client, renter.withdrawer, USDC) : 0n;
        renter.withdrawnMicro += taken;
      }
    };
    const guard = (name: string, loop: () => Promise<void>) =>
      loop().catch((error: Error) => {
        workloadErrors.push(`${name}: ${error.message}`);
      });
    // x402 top-ups for the first renter, through the load balancer.
    const topUps: TopUps = { payer: x402Wallet.account.address, paid: [] };
    const topUpLoop = async () => {
      const renter = renters[0] as Renter;
      while (running) {
        await new Promise((resolve) => setTimeout(resolve, 3_000 + random() * 4_000));
        const paid = running ? await topUp(c.lbBase, renter.token, x402Wallet.account, 2n * USDC, topUps) : 0n;
        renter.toppedUpMicro += paid;
      }
    };
    const loops = [guard('jobs', jobLoop), guard('deposits', depositLoop), guard('withdrawals', withdrawLoop), guard('x402', topUpLoop)];
    // Jobs on the simulated machines (metered by sim-jobs.ts), one loop per machine, and the host's payouts.
    const simOfferIds = await simOffers(client, (renters[0] as Renter).token, simulated);
    for (const offerId of simOfferIds.slice(0, options.simJobLoops ?? 2)) {
      loops.push(
        guard('simulated jobs', () =>
          simJobLoop({
            client,
            sims: simulated,
            offerId,
            imageDigest: s.world.image.digestRef,
            sshPublicKey: s.ssh.publicKey,
            renters,
            random,
            running: () => running,
          }),
        ),
      );
    }
    const host = await withdrawer(client, s.hostEmail);
    const paidOut = { micro: 0n };
    loops.push(
      guard('payouts', () =>
        payoutLoop({ client, host, hostToken: s.hostToken, minMicro: PAYOUT_MIN_MICRO, random, running: () => running, paid: paidOut }),
      ),
    );

    // Faults on the seeded schedule, each followed by the agent's return to a channel.
    const plan = planFaults(seed, options.rounds ?? 1, { pauseMs: options.pauseMs ?? 12_000, gapMs: options.gapMs ?? [1_000, 3_000] });
    const faults: InjectedFault[] = [];
    const reconnects: number[] = [];
    const reconnectBoundMs = options.reconnectBoundMs ?? 45_000;
    const online = async () => {
      const answer = await client.call('GET', `/api/v1/hosts/machines/${s.machineId}`, s.hostToken);
      return answer.status === 200 && answer.body.liveness === 'online';
    };
    const burstRenter = renters[0] as Renter;
    for (const planned of plan) {
      await new Promise((resolve) => setTimeout(resolve, planned.afterMs));
      // A SIGSTOP goes to a lease holder (the chain watcher's or the payer's, by the seed): the fencing is what it tests.
      if (planned.kind === 'pause') {
        const lease = random() < 0.5 ? 'chain_watch_state' : 'payout_wallet_state';
        const holder = await leaseHolder(c, lease);
        if (holder !== null) planned.replica = holder;
        log(`the SIGSTOP goes to replica ${planned.replica + 1}${holder === null ? '' : `, holder of the ${lease} lease`}`);
      }
      // The burst of a kill mid-request: quotes, and three x402 top-ups whose settlement may be in flight on the
      // killed replica (resent with the same header elsewhere: it must settle and credit once).
      let burstCalls = 0;
      const fault = await injectFault(c, planned, async () => {
        if (burstCalls++ % 4 === 0) {
          const paid = await topUp(c.lbBase, burstRenter.token, x402Wallet.account, USDC + BigInt(burstCalls), topUps);
          burstRenter.toppedUpMicro += paid;
          return;
        }
        await client.mutate('POST', '/api/v1/quotes', burstRenter.token, {
          offer_id: s.offerId,
          gpu_count: 1,
          duration_limit_s: 600,
          budget_micro: String(USDC),
          image_digest: s.world.image.digestRef,
        });
      });
      faults.push(fault);
      log(`fault ${faults.length}/${plan.length}: ${fault.kind}: ${fault.note} (${fault.took} ms)`);
      const since = Date.now();
      await waitFor(online, { timeoutMs: reconnectBoundMs * 2, intervalMs: 200, description: 'the agent back online' }).catch(
        () => undefined,
      );
      reconnects.push(Date.now() - since);
      log(`the real agent is online ${reconnects.at(-1)} ms after the fault`);
    }
    running = false;
    await Promise.all(loops);
    await c.settle();
    await anvil.mine(3);
    log(`faults done; ${client.requests} requests, settling`);

    // ---- the checks ----
    const invariants: Invariant[] = [];
    const check = (name: string, ok: boolean, detail: string) => {
      invariants.push({ name, ok, detail });
      log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`);
    };
    const db = new pg.Client({ connectionString: c.postgres.url });
    await db.connect();
    try {
      check('no replica died of a fault', c.unexpectedExits().length === 0, c.unexpectedExits().join('\n') || 'all three running');
      check(
        'every fault answered retryably (no 500)',
        client.internalErrors.length === 0,
        client.internalErrors.length === 0 ? 'none' : JSON.stringify(client.internalErrors.slice(0, 3)),
      );
      check(
        'the workload ran without errors',
        workloadErrors.length === 0,
        workloadErrors.join('; ') || `${renters.flatMap((r) => r.jobs).length} jobs`,
      );
      const verify = JSON.parse(await controlPlaneCli(cp, ['ledger', 'verify']));
      check('the ledger verifies', verify.ok === true, JSON.stringify(verify).slice(0, 300));

      // Deposits: every transfer credited once, the total what was sent.
      await waitFor(async () => (await db.query(`select count(*)::int as n from chain_deposits where state = 'SEEN'`)).rows[0].n === 0, {
        timeoutMs: 60_000,
        description: 'every seen deposit settled',
      }).catch(() => undefined);
      const credited = await db.query(
        `select tx_hash, log_index, count(*)::int as n, count(distinct posting_id)::int as postings, sum(amount_micro)::text as micro from chain_deposits where state = 'CREDITED' group by tx_hash, log_index`,
      );
      const sent = renters.reduce((sum, r) => sum + r.depositedMicro, 0n);
      const creditedMicro = credited.rows.reduce((sum, row) => sum + BigInt(row.micro), 0n);
      check(
        'every deposit credited once',
        credited.rows.every((row) => row.n === 1 && row.postings === 1) && creditedMicro === sent,
        `${credited.rows.length} transfers, ${creditedMicro} credited of ${sent} sent`,
      );

      const topUpProblems = await checkTopUps(c.lbBase, (renters[0] as Renter).token, chain, anvil, x402.treasury, topUps);
      check(
        'every x402 top-up settled and credited once',
        topUpProblems.length === 0 && topUps.paid.length > 0,
        topUpProblems.join('; ') ||
          `${topUps.paid.length} top-ups confirmed (${topUps.refused ?? 0} refused, ${topUps.resent ?? 0} resends of a header), the treasury holds what was paid`,
      );
      const unpaid = await checkPaidOnce(client, chain, anvil, wallet.address, [...renters.map((r) => r.withdrawer), host]);
      const withdrawals = renters.reduce((n, r) => n + r.withdrawer.withdrawals.length, 0);
      check(
        'every withdrawal and host payout paid once on chain',
        unpaid.length === 0 && host.withdrawals.length > 0,
        unpaid.join('; ') || `${withdrawals} withdrawals and ${host.withdrawals.length} host payouts confirmed, one transfer each`,
      );
      const earned = await hostEarnings(client, renters);
      const hostLedger = JSON.parse(await controlPlaneCli(cp, ['ledger', 'balance', '--email', s.hostEmail]));
      const hostHas = BigInt(hostLedger.pending_micro) + BigInt(hostLedger.payable_micro) + BigInt(hostLedger.held_micro);
      check(
        "the host's ledger accounts equal its earnings less its payouts",
        hostHas === earned - paidOut.micro && earned > 0n,
        `ledger ${hostHas} (pending ${hostLedger.pending_micro}, payable ${hostLedger.payable_micro}), earned ${earned} less paid out ${paidOut.micro}`,
      );
      const { problems: simProblems, refusedBy, refusedJobs } = await checkSimReceipts(client, simulated, renters);
      for (const line of refusedJobs) log(`receipts refused on job ${line}`);
      const simJobs = renters.flatMap((r) => r.jobs).filter((j) => simulated.jobs.sent(j.jobId) !== null).length;
      check(
        'every simulated meter receipt counted once (accepted runtime equals the receipts not refused)',
        simProblems.length === 0 && simJobs > 0,
        simProblems.join('; ') ||
          `${simJobs} jobs, ${simulated.jobs.receiptsSent} receipts, ${simulated.jobs.resent} messages resent after reconnects, refused ${JSON.stringify(refusedBy)}`,
      );

      // Jobs: charges follow accepted runtime once; runtime at most wall time; the agent agrees on the end.
      let jobCount = 0;
      const jobProblems: string[] = [];
      for (const renter of renters) {
        let charged = 0n;
        for (const { jobId, quote } of renter.jobs) {
          jobCount++;
          const job = (await client.call('GET', `/api/v1/jobs/${jobId}`, renter.token)).body;
          charged += BigInt(job.cumulative_charge_micro);
          const expected = chargesFor(
            { machineRateMicroPerHour: BigInt(quote.machine_rate_micro_per_hour), platformFeeBps: BigInt(quote.platform_fee_bps) },
            BigInt(job.funded_budget_micro),
            BigInt(job.accepted_runtime_ms),
          );
          if (expected.cumulativeMicro !== BigInt(job.cumulative_charge_micro)) {
            jobProblems.push(`${jobId}: charged ${job.cumulative_charge_micro}, runtime says ${expected.cumulativeMicro}`);
          }
          if (job.meter_started_at !== null && job.stopped_at !== null) {
            const wallMs = Date.parse(job.stopped_at) - Date.parse(job.meter_started_at);
            if (Number(job.accepted_runtime_ms) > wallMs + 2_000)
              jobProblems.push(`${jobId}: ${job.accepted_runtime_ms} ms metered in ${wallMs} ms`);
          }
          if (job.state !== 'CLOSED' && job.state !== 'FAILED') jobProblems.push(`${jobId}: ${job.state} after the stop`);
          const record = await s.agentJobRecord(jobId).catch(() => null);
          if (record !== null && !['stopped', 'cleaned', 'failed', 'exited'].some((p) => JSON.stringify(record).includes(`"${p}"`))) {
            jobProblems.push(`${jobId}: the agent's record ${JSON.stringify(record).slice(0, 200)}`);
          }
        }
        const balance = await available(renter);
        if (balance !== renter.depositedMicro + renter.toppedUpMicro - charged - renter.withdrawnMicro) {
          jobProblems.push(
            `${renter.email}: balance ${balance}, deposits ${renter.depositedMicro} and top-ups ${renter.toppedUpMicro} less charges ${charged} less withdrawals ${renter.withdrawnMicro}`,
          );
        }
      }
      const leftover = await jobContainers(world);
      if (leftover.length > 0) jobProblems.push(`containers still on the machine: ${leftover.join(', ')}`);
      check(
        'meter receipts counted once, balances equal deposits less charges and withdrawals, jobs closed where the agent stopped them',
        jobProblems.length === 0,
        jobProblems.join('; ') || `${jobCount} jobs`,
      );

      const differences = await client.replayThrough(c.replicas.map((r) => r.base));
      check(
        'every idempotent request answers its first answer through any replica',
        differences.length === 0,
        differences.slice(0, 3).join('\n') || `${client.mutations.length} mutations x 3 replicas`,
      );
      const slowest = Math.max(0, ...reconnects);
      await waitFor(() => simulated.connected() === simulated.count, {
        timeoutMs: reconnectBoundMs,
        description: 'every simulated agent connected',
      }).catch(() => undefined);
      const simSlowest = simulated.longestDowntimeMs();
      check(
        'every agent is back on a channel within its bound after every fault',
        slowest <= reconnectBoundMs && simSlowest <= reconnectBoundMs && simulated.connected() === simulated.count,
        `real agent slowest ${slowest} ms; ${simulated.connected()}/${simulated.count} simulated agents connected, ${simulated.reconnects} reconnect tries, longest outage ${simSlowest} ms (bound ${reconnectBoundMs})`,
      );

      const leases = await db.query(`select * from lease_changes order by id`).catch(() => ({ rows: [] as any[] }));
      const overlaps = leases.rows.filter(
        (row) => row.previous_owner !== null && Date.parse(row.previous_until) > Date.parse(row.acquired_at),
      );
      check(
        'no lease held by two replicas at once',
        overlaps.length === 0 && leases.rows.length > 0,
        overlaps.length > 0 ? JSON.stringify(overlaps.slice(0, 3)) : `${leases.rows.length} lease changes logged`,
      );
    } finally {
      await db.end();
    }
    return {
      seed,
      faults,
      requests: client.requests,
      retries: client.retries,
      mutations: client.mutations.length,
      statuses: Object.fromEntries(client.statuses),
      jobs: renters.reduce((n, r) => n + r.jobs.length, 0),
      deposits: renters.reduce((n, r) => n + Number(r.depositedMicro / DEPOSIT_MICRO), 0),
      invariants,
    };
  } catch (error) {
    // In the error itself, not only on stdout: CI's report keeps the failure's message whole.
    if (cluster && error instanceof Error) error.message += `\n--- the cluster at the failure ---\n${cluster.logs()}`;
    throw error;
  } finally {
    sims?.stop();
    await site?.stop().catch(() => undefined);
    await Promise.all([cluster?.stop(), stopWorld(), anvil.stop()]);
  }
}
