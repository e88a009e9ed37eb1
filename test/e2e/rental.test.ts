// A whole rental on real parts, on each store: a dockerd the test starts, the job image served by digest from a
// loopback registry, `ark-cp serve`, and a paired `ark-agent run` whose job runs on that dockerd. Quote, reserve,
// RUNNING; a real SSH client runs a command in the container through the access endpoint; meter receipts charge the
// ledger; a budget extension; stop, the unspent budget back at STOPPED; a file fetched over SFTP in the retrieval
// window; CLOSED. The host is paid exactly the formula's amount for the accepted runtime, the renter gets the rest back,
// and the ledger verifies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDockerAvailable } from '../harness/dockerd.js';
import {
  DIALECTS,
  type DockerWorld,
  endpointOf,
  expectedCharges,
  jobContainers,
  jobVolumes,
  MACHINE_RATE_MICRO_PER_HOUR,
  RentalSite,
  sftpOf,
  sftpRead,
  sftpWrite,
  sshConnect,
  sshExec,
  startDockerWorld,
} from './rental-helpers.js';

const HOUR_MS = 3_600_000n;

describe.skipIf(!isDockerAvailable())('a whole rental on real parts', () => {
  let world: DockerWorld;
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    world = await startDockerWorld();
  }, 180_000);

  afterAll(async () => {
    await world?.stop();
    console.info(`rental timings (ms): ${JSON.stringify(timings)}`);
  }, 60_000);

  describe.each(DIALECTS)('on %s', (dialect) => {
    let site: RentalSite;

    beforeAll(async () => {
      site = await RentalSite.start(dialect, world);
    }, 180_000);

    afterAll(async () => {
      await site?.stop();
    }, 60_000);

    it('quote, reserve, run, SSH, metering, budget extension, stop, SFTP retrieval, close: the host is paid the formula', {
      timeout: 180_000,
    }, async () => {
      const budget = 3_000_000n;
      const payableBefore = await site.hostEarned();

      // Quote and reserve: the budget moves from available to the job's hold.
      const reservedAt = Date.now();
      const { jobId, quote } = await site.reserve({ budgetMicro: budget, env: { RENTAL_GREETING: 'hello from the renter' } });
      expect(quote).toMatchObject({
        machine_id: site.machineId,
        image_digest: world.image.digestRef,
        meter_start: 'verified_ready',
        budget_micro: budget.toString(),
        machine_rate_micro_per_hour: MACHINE_RATE_MICRO_PER_HOUR.toString(),
      });
      expect(await site.renterBalance()).toEqual({ available: site.creditMicro - budget, held: budget });

      // RUNNING once the agent pulled by digest, started the container and verified readiness: the meter starts.
      const running = await site.waitState(jobId, 'RUNNING');
      timings[`${dialect}ReservationToRunning`] = Date.now() - reservedAt;
      expect(running).toMatchObject({ fence: '1', machine_id: site.machineId, cumulative_charge_micro: '0', close_reason: null });
      expect(running.meter_started_at).not.toBeNull();

      // Verified readiness (issue 24 item 1): the meter starts when the control plane itself verified the host key at the
      // endpoint the renter is given, never at the agent's own (earlier) word; the evidence is in the RUNNING event.
      const startEvents = await site.events(jobId);
      const reported = startEvents.find((event) => event.kind === 'readiness_reported');
      const toRunning = startEvents.find((event) => event.kind === 'state_changed' && event.data.to === 'RUNNING');
      expect(reported?.data.reported_at).toEqual(expect.any(String));
      expect(Date.parse(running.meter_started_at)).toBeGreaterThanOrEqual(Date.parse(reported?.data.reported_at));
      expect(toRunning?.data).toMatchObject({ from: 'STARTING', meter_started_at: running.meter_started_at });
      expect(toRunning?.data.verification).toMatchObject({
        host: '127.0.0.1',
        verified_at: running.meter_started_at,
        ssh_host_key_fingerprint: expect.stringMatching(/^SHA256:/),
      });

      // Access: SSH on the agent's own listener, reached at the host the agent reported, its host key pinned by the fingerprint.
      const execution = await site.renter('GET', `/api/v1/jobs/${jobId}/access`);
      expect(execution.status).toBe(200);
      expect(execution.body).toMatchObject({ mode: 'execution', ssh_host_key_fingerprint: expect.stringMatching(/^SHA256:/) });
      const ssh = endpointOf(execution.body, 'ssh');
      // What was verified is exactly what the renter is handed: the same endpoint and host key.
      expect(toRunning?.data.verification).toMatchObject({
        port: ssh.external_port,
        ssh_host_key_fingerprint: execution.body.ssh_host_key_fingerprint,
      });
      expect(ssh.external_host).toBe('127.0.0.1');
      expect(execution.body.ssh_command).toBe(`ssh -p ${ssh.external_port} root@127.0.0.1`);
      const shell = await sshConnect(ssh.external_host, ssh.external_port, site.ssh.privateKey, execution.body.ssh_host_key_fingerprint);
      try {
        const ran = await sshExec(
          shell,
          'echo "$RENTAL_GREETING" > /workspace/result.txt && cat /workspace/result.txt && id -u && test -x /bin/busybox && echo in-container',
        );
        expect(ran).toEqual({ stdout: 'hello from the renter\n0\nin-container\n', stderr: '', code: 0 });
      } finally {
        shell.end();
      }

      // Meter receipts every second charge the ledger by the formula.
      const metered = await site.waitJob(jobId, (job) => BigInt(job.accepted_runtime_ms) >= 2_000n, 'two seconds of accepted runtime');
      expect(BigInt(metered.cumulative_charge_micro)).toBe(expectedCharges(quote, metered).cumulativeMicro);
      expect(BigInt(metered.cumulative_charge_micro)).toBeGreaterThan(0n);
      expect(metered.last_meter_receipt_at).not.toBeNull();

      // Budget extension: compare-and-set on both versions, one more hold; a stale version is refused.
      const extension = { additional_budget_micro: '1000000', new_duration_limit_s: 900 };
      const extended = await site.renter('POST', `/api/v1/jobs/${jobId}/budget-extension`, {
        ...extension,
        expected_job_version: metered.job_version,
        expected_budget_version: metered.budget_version,
      });
      expect(extended.status).toBe(202);
      expect(extended.body).toEqual({
        job_id: jobId,
        budget_version: (BigInt(metered.budget_version) + 1n).toString(),
        funded_budget_micro: (budget + 1_000_000n).toString(),
      });
      const afterExtension = await site.job(jobId);
      expect(afterExtension).toMatchObject({ funded_budget_micro: '4000000', duration_limit_s: 900, state: 'RUNNING' });
      expect(BigInt(afterExtension.job_version)).toBeGreaterThan(BigInt(metered.job_version));
      const staleBudget = await site.renter('POST', `/api/v1/jobs/${jobId}/budget-extension`, {
        ...extension,
        expected_job_version: afterExtension.job_version,
        expected_budget_version: metered.budget_version,
      });
      expect(staleBudget.status).toBe(409);
      expect(staleBudget.body.error.code).toBe('BUDGET_VERSION_MISMATCH');
      const staleJob = await site.renter('POST', `/api/v1/jobs/${jobId}/budget-extension`, {
        ...extension,
        expected_job_version: metered.job_version,
        expected_budget_version: afterExtension.budget_version,
      });
      expect(staleJob.status).toBe(409);
      expect(staleJob.body.error.code).toBe('JOB_VERSION_MISMATCH');
      expect((await site.renterBalance()).available).toBe(site.creditMicro - budget - 1_000_000n);
      // Receipts keep coming after it.
      await site.waitJob(
        jobId,
        (job) => BigInt(job.accepted_runtime_ms) >= BigInt(afterExtension.accepted_runtime_ms) + 1_000n,
        'a receipt after the extension',
      );

      // Stop: STOPPING at once, STOPPED once the agent confirms (its final receipt first).
      const stopAskedAt = Date.now();
      const stop = await site.renter('POST', `/api/v1/jobs/${jobId}/stop`, { reason: 'finished' });
      expect(stop.status).toBe(202);
      expect(stop.body).toEqual({ job_id: jobId, state: 'STOPPING' });
      const stopped = await site.waitState(jobId, 'STOPPED');
      expect(stopped.stopped_at).not.toBeNull();
      expect(stopped.close_reason).toBe('stopped_by_renter');
      // The unspent budget is back at STOPPED, with the final receipt charged: not after the retrieval window (issue 22).
      expect(await site.renterBalance()).toEqual({ available: site.creditMicro - BigInt(stopped.cumulative_charge_micro), held: 0n });
      const releasedAtStop = (await site.events(jobId)).filter((event) => event.kind === 'hold_released');
      expect(releasedAtStop.map((event) => BigInt(event.data.released_micro))).toEqual([
        BigInt(stopped.funded_budget_micro) - BigInt(stopped.cumulative_charge_micro),
      ]);
      timings[`${dialect}StopToBudgetBack`] = Date.now() - stopAskedAt;

      // Retrieval: read-only SFTP over the job's volume on the same port, in the window.
      const retrieval = await site.renter('GET', `/api/v1/jobs/${jobId}/access`);
      expect(retrieval.status).toBe(200);
      expect(retrieval.body.mode).toBe('retrieval-read-only');
      const sftpEndpoint = endpointOf(retrieval.body, 'sftp-retrieval');
      expect(sftpEndpoint.external_port).toBe(ssh.external_port);
      const files = await sshConnect(
        sftpEndpoint.external_host,
        sftpEndpoint.external_port,
        site.ssh.privateKey,
        retrieval.body.ssh_host_key_fingerprint,
      );
      try {
        const sftp = await sftpOf(files);
        expect(await sftpRead(sftp, '/result.txt')).toBe('hello from the renter\n');
        await expect(sftpWrite(sftp, '/planted.txt', 'no')).rejects.toThrow();
      } finally {
        files.end();
      }

      // CLOSED after the window: container and volume removed; nothing more was charged after STOPPED.
      const closed = await site.waitState(jobId, 'CLOSED');
      expect(closed.cumulative_charge_micro).toBe(stopped.cumulative_charge_micro);
      expect(closed.close_reason).toBe('stopped_by_renter');
      const access = await site.renter('GET', `/api/v1/jobs/${jobId}/access`);
      expect(access.status).toBe(403);
      expect(await jobContainers(world)).toEqual([]);
      expect(await jobVolumes(world)).toEqual([]);

      // Money: the formula on the accepted runtime, exactly.
      const runtimeMs = BigInt(closed.accepted_runtime_ms);
      const charges = expectedCharges(quote, closed);
      expect(BigInt(closed.cumulative_charge_micro)).toBe(charges.cumulativeMicro);
      expect(charges.cumulativeMicro).toBeLessThan(BigInt(closed.funded_budget_micro));
      const hostPaid = (await site.hostEarned()) - payableBefore;
      expect(hostPaid).toBe(charges.hostMicro);
      // Uncapped, the host's share is the machine-rate formula or one micro below it (DESIGN.md, charges.ts).
      const machineFormula = (MACHINE_RATE_MICRO_PER_HOUR * runtimeMs) / HOUR_MS;
      expect(machineFormula - hostPaid).toBeGreaterThanOrEqual(0n);
      expect(machineFormula - hostPaid).toBeLessThanOrEqual(1n);
      expect(await site.renterBalance()).toEqual({ available: site.creditMicro - charges.cumulativeMicro, held: 0n });
      expect(await site.verifyLedger()).toMatchObject({ ok: true, sum_micro: '0', discrepancies: [] });

      // The control plane counted exactly what the agent metered, once.
      const record = await site.agentJobRecord(jobId);
      expect(record.phase).toBe('cleaned');
      // All of it but the time between the agent's ready report (its meter's start) and the control plane's verification
      // of the endpoint (the job's meter start): the renter pays from verified readiness on.
      const unverifiedMs = BigInt(Date.parse(running.meter_started_at) - Date.parse(reported?.data.reported_at));
      expect(record.meter).toMatchObject({ final_sent: true });
      expect(BigInt(record.meter.runtime_ms_total) - BigInt(closed.accepted_runtime_ms)).toBe(unverifiedMs);
      expect(runtimeMs).toBeGreaterThanOrEqual(3_000n);

      // Every transition is a sequenced event; nothing was refused.
      const events = await site.events(jobId);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      const transitions = events.filter((event) => event.kind === 'state_changed').map((event) => `${event.data.from}->${event.data.to}`);
      expect(transitions).toEqual([
        'RESERVED->STARTING',
        'STARTING->RUNNING',
        'RUNNING->STOPPING',
        'STOPPING->STOPPED',
        'STOPPED->CLEANING',
        'CLEANING->CLOSED',
      ]);
      const kinds = events.map((event) => event.kind);
      expect(kinds[0]).toBe('reserved');
      expect(kinds).toContain('budget_extended');
      // Released once, at STOPPED.
      expect(events.filter((event) => event.kind === 'hold_released')).toEqual(releasedAtStop);
      expect(kinds).not.toContain('receipt_refused');
      expect(kinds).not.toContain('status_refused');
    });

    it("the renter's spend-rate cap refuses a reservation over it, and the refusal holds nothing", { timeout: 60_000 }, async () => {
      // The whole rental above has closed: nothing commits against the cap.
      const before = await site.renter('GET', '/api/v1/account/spend-cap');
      expect(before.status, JSON.stringify(before.body)).toBe(200);
      expect(before.body).toMatchObject({ committed_micro_per_hour: '0', is_default: true });

      const quoted = await site.renter('POST', '/api/v1/quotes', {
        offer_id: site.offerId,
        gpu_count: 1,
        duration_limit_s: 600,
        budget_micro: '1000000',
        image_digest: world.image.digestRef,
      });
      expect(quoted.status, JSON.stringify(quoted.body)).toBe(201);

      // An API key may tighten its own account's cap without a step-up: 1 USDC an hour, under this machine's rate.
      const lowered = await site.renter('PUT', '/api/v1/account/spend-cap', { cap_micro_per_hour: '1000000' }, true);
      expect(lowered.status, JSON.stringify(lowered.body)).toBe(200);
      expect(lowered.body).toMatchObject({ cap_micro_per_hour: '1000000', is_default: false, available_micro_per_hour: '1000000' });

      const balanceBefore = await site.renterBalance();
      const reserved = await site.renter('POST', '/api/v1/jobs', { quote_id: quoted.body.quote_id, ssh_public_keys: [site.ssh.publicKey] });
      expect(reserved.status, JSON.stringify(reserved.body)).toBe(409);
      expect(reserved.body.error).toMatchObject({ code: 'SPEND_RATE_CAP_EXCEEDED', retryable: false });
      expect(await site.renterBalance()).toEqual(balanceBefore);

      // Raising it back needs a step-up, which this key has not made.
      const raised = await site.renter('PUT', '/api/v1/account/spend-cap', { cap_micro_per_hour: null }, true);
      expect(raised.status, JSON.stringify(raised.body)).toBe(403);
      expect(raised.body.error).toMatchObject({ code: 'STEP_UP_REQUIRED' });
    });
  });
});
