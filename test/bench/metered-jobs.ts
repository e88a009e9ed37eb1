// The metered share of agents.bench.ts's fleet: machines that are real rows (enrolled, live, listed: fleet-rows.ts,
// with the key the simulated agent signs with), each with a RUNNING job of one funded renter, seeded straight into the
// store. The money goes through the ledger's own transfer (a deposit, then each job's reservation hold, as
// services/jobs/reserve.ts posts it) and the job row through insertJob, then moved to RUNNING with its meter started,
// so the gateway's real meter_receipt handlers charge it and the ledger still verifies. Each job's meter started at
// its own phase within one receipt interval, so the receipts of the fleet are spread over the interval.
import { randomUUID } from 'node:crypto';
import { ledgerAccounts } from '@ark/control-plane/domain/ledger/accounts';
import type { Store } from '@ark/control-plane/store/db';
import { insertAccount } from '@ark/control-plane/store/accounts';
import { inTransactionWithRetry, runTransfer, transfer } from '@ark/control-plane/store/ledger';
import { insertJob, updateJob } from '@ark/control-plane/store/jobs';
import type { BenchMachine } from './agents-server.js';
import { fleetMachineRows } from './fleet-rows.js';
import type { MeteredJob } from './sim-agent.js';

/** $1 an hour: a bench run of an hour charges each job $1. */
const RATE_MICRO_PER_HOUR = 1_000_000n;
/** Each job's hold: $10, far beyond any bench run. */
const BUDGET_MICRO = 10_000_000n;
/** The GPUs the simulated telemetry lists (sim-agent.ts), assigned to each job. */
const GPUS = ['00000000:1:00.0', '00000000:2:00.0'];
const MACHINES_PER_HOST = 8;

export interface MeteredFleet {
  renterAccountId: string;
  /** By agent index. */
  jobs: Map<number, MeteredJob>;
}

/** Seeds the rows of the machines at `indices` (rows, their jobs, the renter's money); answers each one's job. */
export async function seedMeteredFleet(
  store: Store,
  machines: (index: number) => BenchMachine,
  indices: number[],
  receiptIntervalMs: number,
): Promise<MeteredFleet> {
  const now = new Date();
  const at = now.toISOString();
  // Hosts of MACHINES_PER_HOST machines each, as real fleets are spread: one host for all would make its pending
  // account a lock every replica's charges wait on, which no real fleet has (the platform's fees account is shared).
  const hosts: string[] = [];
  for (let h = 0; h < Math.ceil(indices.length / MACHINES_PER_HOST); h++) {
    const host = await insertAccount(store.db, {
      email: `bench-host-${randomUUID()}@example.test`,
      passwordHash: null,
      name: null,
      role: 'host',
      emailVerified: true,
      now,
    });
    hosts.push(host.id);
  }
  const hostOf = (k: number) => hosts[Math.floor(k / MACHINES_PER_HOST)] as string;
  const renter = await insertAccount(store.db, {
    email: `bench-renter-${randomUUID()}@example.test`,
    passwordHash: null,
    name: null,
    role: 'renter',
    emailVerified: true,
    now,
  });
  const jobs = new Map<number, MeteredJob>();
  if (indices.length === 0) return { renterAccountId: renter.id, jobs };
  await runTransfer(store, {
    from: ledgerAccounts.external(),
    to: ledgerAccounts.available(renter.id),
    amountMicro: BUDGET_MICRO * BigInt(indices.length),
    kind: 'deposit',
    reference: `bench-deposit-${randomUUID()}`,
    at: now,
  });
  const db = store.db as any;
  for (let from = 0; from < indices.length; from += 250) {
    const batch = indices.slice(from, from + 250);
    const rows = batch.map((index, k) => {
      const machine = machines(index);
      return fleetMachineRows({
        index,
        machineId: machine.id,
        tokenId: randomUUID(),
        offerId: randomUUID(),
        hostAccountId: hostOf(from + k),
        gpuModel: 'NVIDIA GeForce RTX 4090',
        gpuCount: GPUS.length,
        created: at,
        lastHeartbeatAt: at,
        publicKey: machine.publicKeyBase64,
      });
    });
    await db
      .insertInto('enrollment_tokens')
      .values(rows.map((r) => r.token))
      .execute();
    await db
      .insertInto('machines')
      .values(rows.map((r) => r.machine))
      .execute();
    await db
      .insertInto('offers')
      .values(rows.map((r) => r.offer))
      .execute();
    await db
      .insertInto('offer_versions')
      .values(
        rows.map((r, k) => ({
          offer_id: r.offer.id,
          version: 2n,
          rate_micro_per_hour: RATE_MICRO_PER_HOUR,
          included_disk_gib: 100n,
          included_egress_gib: 50n,
          available_from: at,
          available_until: new Date(now.getTime() + 365 * 86_400_000).toISOString(),
          created_at: at,
          created_by_account_id: hostOf(from + k),
        })),
      )
      .execute();
    await inTransactionWithRetry(store, async (trx) => {
      for (const [k, index] of batch.entries()) {
        const jobId = randomUUID();
        const meterStartMs = now.getTime() - Math.floor(Math.random() * receiptIntervalMs);
        await transfer(trx, {
          from: ledgerAccounts.available(renter.id),
          to: ledgerAccounts.hold(jobId, renter.id),
          amountMicro: BUDGET_MICRO,
          kind: 'reservation',
          reference: jobId,
          at: now,
        });
        await insertJob(trx, {
          id: jobId,
          accountId: renter.id,
          machineId: machines(index).id,
          hostAccountId: hostOf(from + k),
          quoteId: jobId,
          machineRateMicroPerHour: RATE_MICRO_PER_HOUR,
          platformFeeBps: 1000n,
          fundedBudgetMicro: BUDGET_MICRO,
          durationLimitS: 30n * 86_400n,
          hostCeilingAt: new Date(now.getTime() + 365 * 86_400_000),
          gpuCount: GPUS.length,
          gpuModel: 'NVIDIA GeForce RTX 4090',
          gpuPciAddresses: GPUS,
          imageDigest: `ark/job@sha256:${'b'.repeat(64)}`,
          template: null,
          launchSealed: 'x',
          envSealed: 'x',
          engineKeySealed: null,
          now,
        });
        const started = new Date(meterStartMs).toISOString();
        await updateJob(trx, jobId, { state: 'RUNNING', meter_started_at: started, state_changed_at: started, updated_at: at });
        jobs.set(index, { jobId, meterStartMs });
      }
    });
  }
  return { renterAccountId: renter.id, jobs };
}

export interface MeterCounts {
  /** Sum of the jobs' meter_seq: receipts applied (accepted, or rejected for their content). */
  applied: number;
  acceptedRuntimeMs: number;
  /** Receipts refused or not counted (each leaves a receipt_refused event on its job). */
  refusals: number;
  /** Jobs no longer RUNNING. */
  notRunning: number;
}

/** The metered jobs' receipts so far, from the job rows and their events. */
export async function meterCounts(store: Store, renterAccountId: string): Promise<MeterCounts> {
  const jobs = await store.db
    .selectFrom('jobs')
    .select((eb) => [
      eb.fn.sum<bigint | string | number>('meter_seq').as('applied'),
      eb.fn.sum<bigint | string | number>('accepted_runtime_ms').as('runtime'),
    ])
    .where('account_id', '=', renterAccountId)
    .executeTakeFirstOrThrow();
  const notRunning = await store.db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<bigint | string | number>().as('n'))
    .where('account_id', '=', renterAccountId)
    .where('state', '!=', 'RUNNING')
    .executeTakeFirstOrThrow();
  const refusals = await store.db
    .selectFrom('job_events')
    .innerJoin('jobs', 'jobs.id', 'job_events.job_id')
    .select((eb) => eb.fn.countAll<bigint | string | number>().as('n'))
    .where('jobs.account_id', '=', renterAccountId)
    .where('job_events.kind', '=', 'receipt_refused')
    .executeTakeFirstOrThrow();
  return {
    applied: Number(jobs.applied ?? 0),
    acceptedRuntimeMs: Number(jobs.runtime ?? 0),
    refusals: Number(refusals.n),
    notRunning: Number(notRunning.n),
  };
}
