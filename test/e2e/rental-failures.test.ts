// Rentals when parts fail, on real processes and each store: an agent that vanishes (and comes back, or does not),
// a signed receipt under a stale fence, and the control plane killed with SIGKILL while meter receipts flow.
// The same parts as rental.test.ts: a private dockerd, the job image by digest, `ark-cp serve`, `ark-agent run`.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type TestMachine, RawAgent } from '@ark/control-plane/gateway/testing/raw-agent';
import { ed25519PrivateKeyFromSeed, nodeEd25519Signer } from '@ark/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDockerAvailable } from '../harness/dockerd.js';
import { waitFor } from '../harness/processes.js';
import { api } from './host-side-helpers.js';
import {
  DIALECTS,
  type DockerWorld,
  endpointOf,
  expectedCharges,
  jobContainers,
  RentalSite,
  sshConnect,
  sshExec,
  startDockerWorld,
} from './rental-helpers.js';

type Job = Record<string, any>;

/** The money checks every scenario ends with: the formula on the accepted runtime, exactly, and a verified ledger. */
async function expectSettled(site: RentalSite, quote: any, job: Job, payableBefore: bigint, availableBefore: bigint): Promise<bigint> {
  const charges = expectedCharges(quote, job);
  expect(BigInt(job.cumulative_charge_micro)).toBe(charges.cumulativeMicro);
  const [payable, ledger, balance] = await Promise.all([site.hostEarned(), site.verifyLedger(), site.renterBalance()]);
  expect(payable - payableBefore).toBe(charges.hostMicro);
  expect(balance).toEqual({ available: availableBefore - charges.cumulativeMicro, held: 0n });
  expect(ledger).toMatchObject({ ok: true, sum_micro: '0', discrepancies: [] });
  return payable;
}

/** A plain TCP listener on 127.0.0.1:port, standing for another process that took the port. */
async function occupy(port: number): Promise<{ close(): Promise<void> }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve());
  });
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const transitionsOf = (events: Array<{ kind: string; data: Record<string, any> }>) =>
  events.filter((event) => event.kind === 'state_changed').map((event) => `${event.data.from}->${event.data.to}`);

describe.skipIf(!isDockerAvailable())('rentals when parts fail', () => {
  let world: DockerWorld;

  beforeAll(async () => {
    world = await startDockerWorld();
  }, 180_000);

  afterAll(async () => {
    await world?.stop();
  }, 60_000);

  describe.each(DIALECTS)('on %s', (dialect) => {
    let site: RentalSite;
    /** A job the agent-vanishing test brings back under a new fence; the stale-fence test uses and ends it. */
    let returned: { jobId: string; quote: any; payableBefore: bigint; availableBefore: bigint } | undefined;
    /** The host's payable after the previous test (a fresh host starts at nothing); each test adds its job's share. */
    let payable = 0n;

    beforeAll(async () => {
      // A silent agent is noticed within seconds (3 heartbeats) and given up 8 s later. Nothing here is fetched over
      // SFTP: a short retrieval window closes jobs sooner.
      site = await RentalSite.start(dialect, world, {
        cpEnv: { ARK_JOB_AGENT_GRACE_S: '3', ARK_JOB_RECONCILE_TIMEOUT_S: '8', ARK_RETRIEVAL_WINDOW_S: '1' },
      });
    }, 180_000);

    afterAll(async () => {
      await site?.stop();
    }, 60_000);

    it('an agent that vanishes moves its job to RECONCILING and back, unpaid for the gap', { timeout: 150_000 }, async () => {
      const payableBefore = payable;
      const { available: availableBefore } = await site.renterBalance();
      const { jobId, quote } = await site.reserve({ budgetMicro: 3_000_000n });
      await site.waitState(jobId, 'RUNNING');
      const access = (await site.renter('GET', `/api/v1/jobs/${jobId}/access`)).body;
      const ssh = endpointOf(access, 'ssh');
      const before = await sshConnect(ssh.external_host, ssh.external_port, site.ssh.privateKey, access.ssh_host_key_fingerprint);
      try {
        expect((await sshExec(before, 'echo survived > /workspace/mark && echo ok')).stdout).toBe('ok\n');
      } finally {
        before.end();
      }
      await site.waitJob(jobId, (job) => BigInt(job.accepted_runtime_ms) >= 1_000n, 'a first receipt');

      await site.killAgent();
      const reconciling = await site.waitState(jobId, 'RECONCILING', 30_000);
      expect(reconciling.fence).toBe('1');
      // While the agent is away another process takes the job's SSH port: the job comes back regardless.
      const squatter = await occupy(ssh.external_port);
      await site.startAgent();
      // Back: the heartbeat lists the container running, the job is bound again under a new fence.
      const back = await site.waitJob(
        jobId,
        (job) => job.state === 'RUNNING' && job.fence === '2',
        'the job RUNNING under fence 2',
        30_000,
      );
      await site.waitJob(
        jobId,
        (job) => BigInt(job.accepted_runtime_ms) >= BigInt(back.accepted_runtime_ms) + 1_000n,
        'receipts under the new fence',
      );
      // Once the port is free again the agent listens again, and the same container is reached over SSH.
      await squatter.close();
      const after = await waitFor(
        () => sshConnect(ssh.external_host, ssh.external_port, site.ssh.privateKey, access.ssh_host_key_fingerprint).catch(() => undefined),
        { timeoutMs: 20_000, intervalMs: 250, description: 'SSH served again by the restarted agent' },
      );
      try {
        expect(await sshExec(after, 'cat /workspace/mark')).toMatchObject({ stdout: 'survived\n', code: 0 });
      } finally {
        after.end();
      }

      const events = await site.events(jobId);
      expect(transitionsOf(events)).toEqual(['RESERVED->STARTING', 'STARTING->RUNNING', 'RUNNING->RECONCILING', 'RECONCILING->RUNNING']);
      // The receipt covering the silence went out under the old fence and was refused; nothing of the gap was charged.
      for (const event of events.filter((event) => event.kind === 'receipt_refused')) {
        expect(['not_metering', 'stale_fence']).toContain(event.data.reason);
        expect(event.data.fence).toBe('1');
      }
      const now = await site.job(jobId);
      const record = await site.agentJobRecord(jobId);
      expect(record.fence).toBe('2');
      expect(BigInt(record.meter.runtime_ms_total)).toBeGreaterThan(BigInt(now.accepted_runtime_ms) + 2_000n);
      returned = { jobId, quote, payableBefore, availableBefore };
    });

    it('a stale fence is refused: a signed receipt under the old fence charges nothing', { timeout: 150_000 }, async () => {
      if (returned === undefined) throw new Error('needs the job of the previous test');
      const { jobId, quote, payableBefore, availableBefore } = returned;
      // The agent steps aside (cleanly, its queue on disk); a client speaks for the machine with its own key.
      await site.stopAgent();
      const identity = await site.agentIdentity();
      const status = JSON.parse(await readFile(join(site.agentSetup.stateDir, 'status.json'), 'utf8'));
      const secret = Buffer.from(identity.secret_key, 'base64');
      const privateKey = ed25519PrivateKeyFromSeed(secret.subarray(0, 32));
      const machine: TestMachine = {
        id: identity.machine_id,
        privateKey,
        publicKeyBase64: identity.public_key,
        sign: nodeEd25519Signer(privateKey),
      };
      const before = await site.job(jobId);
      const raw = await RawAgent.connect(site.cp.base, machine, identity.control_plane_public_key);
      try {
        const welcome = await raw.handshake();
        // An id past everything the agent has issued: the agent renumbers its queue after it when it reconnects.
        const id = Math.max(welcome.acked_upto + 1, Number(status.channel?.nextMessageId ?? 1));
        const end = new Date();
        raw.send({
          t: 'meter_receipt',
          id,
          job_id: jobId,
          fence: '1',
          meter_seq: 1,
          period_start: new Date(end.getTime() - 1000).toISOString(),
          period_end: end.toISOString(),
          runtime_ms: '1000',
          final: false,
        });
        await waitFor(() => raw.received.some((message) => message.t === 'ack' && message.upto >= id), {
          timeoutMs: 10_000,
          intervalMs: 20,
          description: 'the receipt acknowledged',
        });
      } finally {
        raw.close();
      }
      const refused = (await site.events(jobId)).filter((event) => event.kind === 'receipt_refused' && event.data.reason === 'stale_fence');
      expect(refused.at(-1)?.data).toEqual({ reason: 'stale_fence', fence: '1', meter_seq: 1, runtime_ms: '1000' });
      const unchanged = await site.job(jobId);
      expect(unchanged.accepted_runtime_ms).toBe(before.accepted_runtime_ms);
      expect(unchanged.cumulative_charge_micro).toBe(before.cumulative_charge_micro);

      // The agent comes back: its own receipts are still counted (its queue renumbered past the id used above). Its
      // SSH port is taken this time, so the stop below cannot open retrieval: the job closes all the same.
      const sshPort = (await site.agentJobRecord(jobId)).ssh_port as number;
      const squatter = await occupy(sshPort);
      await site.startAgent();
      const resumed = await site.waitJob(jobId, (job) => job.state === 'RUNNING', 'the job RUNNING again', 30_000);
      await site.waitJob(
        jobId,
        (job) => BigInt(job.accepted_runtime_ms) >= BigInt(resumed.accepted_runtime_ms) + 1_000n,
        'receipts after the agent returned',
      );
      const closed = await site.stopAndClose(jobId).finally(() => squatter.close());
      payable = await expectSettled(site, quote, closed, payableBefore, availableBefore);
    });

    it('an agent that vanishes past the reconcile timeout fails its job, releases the hold and credits the renter once across a kill -9', {
      timeout: 180_000,
    }, async () => {
      const payableBefore = payable;
      const { available: availableBefore } = await site.renterBalance();
      // The control plane kills itself (SIGKILL) the first time it posts an automatic credit, inside the transaction that
      // fails the job (faults.ts, `job.credit`): nothing of that transaction may survive, and the next one credits once.
      // The credit gives back what was charged after the machine's last heartbeat (domain/earnings/credits.ts): with
      // the agent heartbeating every 2 s (ARK_AGENT_HEARTBEAT_INTERVAL_S; the control plane expects as much) and
      // receipts every second, the agent can be killed when a receipt was accepted after the last heartbeat and the next
      // heartbeat is still far off, so the credited period is never empty.
      await site.killControlPlane();
      await site.stopAgent();
      await site.startControlPlaneAgain({ ARK_FAULT_EXIT_AT: 'job.credit', ARK_HEARTBEAT_INTERVAL_S: '2' });
      site.agentSetup.env.ARK_AGENT_HEARTBEAT_INTERVAL_S = '2';
      await site.startAgent();
      const budget = 3_000_000n;
      const { jobId, quote } = await site.reserve({ budgetMicro: budget });
      await site.waitState(jobId, 'RUNNING');
      await site.waitJob(jobId, (job) => BigInt(job.accepted_runtime_ms) >= 2_000n, 'receipts before the agent dies');
      // Both instants are the control plane's own (receipt and heartbeat received): a receipt at least 200 ms after the
      // last heartbeat, and at most 1.2 s since that heartbeat (the next one is 2 s after it).
      await waitFor(
        async () => {
          const [job, machine] = await Promise.all([site.job(jobId), site.machine()]);
          const heartbeatAt = Date.parse(machine.body.last_heartbeat_at);
          return Date.parse(job.last_meter_receipt_at) >= heartbeatAt + 200 && Date.now() - heartbeatAt <= 1_200;
        },
        { timeoutMs: 20_000, intervalMs: 10, description: 'a receipt accepted after the last heartbeat, the next heartbeat not due' },
      );
      const crashed = site.controlPlaneExited();
      await site.killAgent();
      await site.waitState(jobId, 'RECONCILING', 30_000);
      const metered = await site.job(jobId);
      const { pending: pendingBefore } = await site.hostBalances();
      // Past the reconcile timeout the sweep fails the job, reaches the credit, and the process dies before its commit.
      expect(await crashed).toEqual({ code: null, signal: 'SIGKILL' });
      await site.startControlPlaneAgain({ ARK_FAULT_EXIT_AT: '', ARK_HEARTBEAT_INTERVAL_S: '1' });
      const failed = await site.waitState(jobId, 'FAILED', 40_000);
      expect(failed.close_reason).toBe('agent_lost');
      const events = await site.events(jobId);
      expect(transitionsOf(events)).toEqual(['RESERVED->STARTING', 'STARTING->RUNNING', 'RUNNING->RECONCILING', 'RECONCILING->FAILED']);
      // Charged for what was metered before the silence, not a micro more.
      expect(BigInt(failed.cumulative_charge_micro)).toBeGreaterThan(0n);
      expect(failed.cumulative_charge_micro).toBe(metered.cumulative_charge_micro);
      const charges = expectedCharges(quote, failed);
      expect(BigInt(failed.cumulative_charge_micro)).toBe(charges.cumulativeMicro);
      // The automatic credit, once: the charges of what was metered after the machine's last heartbeat come back.
      const credits = events.filter((event) => event.kind === 'job_credited');
      expect(credits).toHaveLength(1);
      const credit = credits[0]?.data as {
        credit_micro: string;
        from_host_pending_micro: string;
        from_platform_micro: string;
        healthy_at: string;
        runtime_ms: string;
      };
      const creditMicro = BigInt(credit.credit_micro);
      const fromHost = BigInt(credit.from_host_pending_micro);
      expect(credit).toMatchObject({ reason: 'agent_lost', from_host_payable_micro: '0' });
      // The last verified-healthy point is the machine's last heartbeat (the agent is dead: nothing moves it since), the
      // credited runtime is what was metered after it, never empty here, and the credit is exactly what that runtime
      // was charged: the charges on all the accepted runtime less those on the part before the point.
      const lastHeartbeatAt = (await site.machine()).body.last_heartbeat_at as string;
      expect(credit.healthy_at).toBe(lastHeartbeatAt);
      const { metered_until: meteredUntil } = await site.cli(['jobs', 'show', '--id', jobId]);
      const accepted = BigInt(failed.accepted_runtime_ms);
      const runtimeMs = BigInt(Date.parse(meteredUntil) - Date.parse(lastHeartbeatAt));
      expect(runtimeMs).toBeGreaterThan(0n);
      expect(runtimeMs).toBeLessThan(accepted);
      expect(credit.runtime_ms).toBe(runtimeMs.toString());
      const beforePoint = expectedCharges(quote, { ...failed, accepted_runtime_ms: (accepted - runtimeMs).toString() });
      expect(creditMicro).toBe(charges.cumulativeMicro - beforePoint.cumulativeMicro);
      expect(creditMicro).toBeGreaterThan(0n);
      // The host's share from its pending earnings (nothing has matured), the fee's from the platform.
      expect(fromHost).toBe(charges.hostMicro - beforePoint.hostMicro);
      expect(BigInt(credit.from_platform_micro)).toBe(charges.feeMicro - beforePoint.feeMicro);
      console.info(
        `automatic credit on ${dialect}: ${credit.credit_micro} micro for ${runtimeMs} ms of ${charges.cumulativeMicro} charged`,
      );
      // The renter: charged less the credit, the rest of the hold back. The host: its pending earnings shrank by the
      // host's part of the credit, nothing of it became payable yet (24 h maturity).
      expect(await site.renterBalance()).toEqual({ available: availableBefore - charges.cumulativeMicro + creditMicro, held: 0n });
      const host = await site.hostBalances();
      expect(host.pending).toBe(pendingBefore - fromHost);
      expect(host.pending + host.payable - payableBefore).toBe(charges.hostMicro - fromHost);
      const renterView = await site.renter('GET', '/api/v1/billing/balance');
      const lines = (renterView.body.credits as Array<{ job_id: string; credit_micro: string }>).filter((line) => line.job_id === jobId);
      expect(lines).toEqual([expect.objectContaining({ credit_micro: credit.credit_micro })]);
      expect(await site.verifyLedger()).toMatchObject({ ok: true, sum_micro: '0', discrepancies: [] });
      payable = host.pending + host.payable;
      // The agent's next run (heartbeating every second again) finds the job failed and removes the container it left running.
      delete site.agentSetup.env.ARK_AGENT_HEARTBEAT_INTERVAL_S;
      await site.startAgent();
      await waitFor(async () => (await jobContainers(world)).length === 0, {
        timeoutMs: 30_000,
        intervalMs: 250,
        description: 'the abandoned container removed',
      });
      expect(await site.job(jobId)).toMatchObject({ state: 'FAILED', cumulative_charge_micro: failed.cumulative_charge_micro });
      expect((await site.events(jobId)).filter((event) => event.kind === 'job_credited')).toHaveLength(1);
    });
    it('kill -9 of the control plane while receipts flow loses no accepted receipt and counts none twice', {
      timeout: 150_000,
    }, async () => {
      const payableBefore = payable;
      const { available: availableBefore } = await site.renterBalance();
      const { jobId, quote } = await site.reserve({ budgetMicro: 3_000_000n });
      const running = await site.waitState(jobId, 'RUNNING');
      const beforeKill = await site.waitJob(jobId, (job) => BigInt(job.accepted_runtime_ms) >= 2_000n, 'receipts before the kill');

      await site.killControlPlane();
      // The agent goes on metering into its persistent queue: receipts it cannot deliver (and perhaps one the dead
      // control plane committed without acknowledging).
      const whileDown = await waitFor(
        async () => {
          const status = await site.agentStatus();
          const channel = status.report?.channel ?? {};
          return channel.connected === false && channel.queued >= 2 ? channel : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 200, description: 'the agent to hold undelivered receipts' },
      );
      expect(whileDown.queued).toBeGreaterThanOrEqual(2);
      // Started again with a long grace: with the short one a control plane down this long reconciles its jobs on
      // start (correctly, but that is the previous tests' path); here the receipts themselves are under test.
      await site.startControlPlaneAgain({ ARK_JOB_AGENT_GRACE_S: '60' });
      // What was accepted before the kill is still there.
      const afterRestart = await site.job(jobId);
      expect(BigInt(afterRestart.accepted_runtime_ms)).toBeGreaterThanOrEqual(BigInt(beforeKill.accepted_runtime_ms));
      expect(afterRestart.state).toBe('RUNNING');
      // The agent reconnects and delivers what it metered meanwhile; metering goes on.
      await site.waitJob(
        jobId,
        (job) => BigInt(job.accepted_runtime_ms) >= BigInt(afterRestart.accepted_runtime_ms) + 2_000n,
        'receipts after the restart',
      );

      const closed = await site.stopAndClose(jobId);
      // Every receipt the agent produced under the one fence was counted once: the totals agree to the millisecond, but
      // for the time between the agent's ready report (its meter's start) and the verified readiness (the job's).
      const record = await site.agentJobRecord(jobId);
      expect(record).toMatchObject({ phase: 'cleaned', fence: '1', meter: { final_sent: true } });
      const reported = (await site.events(jobId)).find((event) => event.kind === 'readiness_reported');
      const unverifiedMs = BigInt(Date.parse(running.meter_started_at) - Date.parse(reported?.data.reported_at));
      expect(BigInt(record.meter.runtime_ms_total) - BigInt(closed.accepted_runtime_ms)).toBe(unverifiedMs);
      expect(closed.fence).toBe('1');
      const events = await site.events(jobId);
      expect(transitionsOf(events)).toEqual([
        'RESERVED->STARTING',
        'STARTING->RUNNING',
        'RUNNING->STOPPING',
        'STOPPING->STOPPED',
        'STOPPED->CLEANING',
        'CLEANING->CLOSED',
      ]);
      expect(events.filter((event) => event.kind === 'receipt_refused' || event.kind === 'receipt_partly_counted')).toEqual([]);
      payable = await expectSettled(site, quote, closed, payableBefore, availableBefore);
    });

    it('a job whose reported endpoint nothing listens on never runs: FAILED, nothing charged, the hold back, the host told', {
      timeout: 150_000,
    }, async () => {
      // The agent tells renters to reach its jobs at an address nothing listens on (its SSH listeners bind 127.0.0.1
      // only), and the control plane gives up on a start after its shortest timeout (10 s from the reservation).
      await site.stopAgent();
      site.agentSetup.env.ARK_AGENT_PUBLIC_HOST = '127.0.0.2';
      await site.restartControlPlane({ ARK_JOB_START_TIMEOUT_S: '10' });
      await site.startAgent();
      const earnedBefore = await site.hostEarned();
      const { available: availableBefore } = await site.renterBalance();
      const { jobId } = await site.reserve({ budgetMicro: 2_000_000n });

      const failed = await site.waitState(jobId, 'FAILED', 60_000);
      expect(failed).toMatchObject({
        close_reason: 'readiness_unverified',
        meter_started_at: null,
        accepted_runtime_ms: '0',
        cumulative_charge_micro: '0',
      });
      const events = await site.events(jobId);
      expect(transitionsOf(events)).toEqual(['RESERVED->STARTING', 'STARTING->FAILED']);
      // The agent did report it ready; the control plane could not reach what it reported, and says so.
      expect(events.some((event) => event.kind === 'readiness_reported')).toBe(true);
      const reason = events.find((event) => event.kind === 'readiness_failed')?.data.reason as string;
      expect(reason).toMatch(/^could not connect to the SSH endpoint 127\.0\.0\.2:\d+: ECONNREFUSED$/);
      expect(events.find((event) => event.kind === 'hold_released')?.data.released_micro).toBe('2000000');
      // Nothing charged: the hold is back whole, the host earned nothing, and the ledger verifies.
      expect(await site.renterBalance()).toEqual({ available: availableBefore, held: 0n });
      expect(await site.hostEarned()).toBe(earnedBefore);
      expect(await site.verifyLedger()).toMatchObject({ ok: true, sum_micro: '0', discrepancies: [] });
      // The host sees why on its machine.
      const machine = await api(site.cp.base, 'GET', `/api/v1/hosts/machines/${site.machineId}`, { token: site.hostToken });
      expect(machine.status).toBe(200);
      expect(machine.body.problems).toContain(`job ${jobId}: readiness could not be verified: ${reason}`);
      // The agent was told to clean up: the container it started is removed.
      await waitFor(async () => (await jobContainers(world)).length === 0, {
        timeoutMs: 30_000,
        intervalMs: 250,
        description: 'the unverified job container removed',
      });
    });
  });
});
