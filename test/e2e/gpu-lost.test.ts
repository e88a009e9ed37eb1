// A GPU lost per telemetry (issue 24 item 3), on real processes and each store: `ark-cp serve`, a machine paired by the
// real `ark-agent pair` from recorded `nvidia-smi -q -x` output (two L4s). A GPU job cannot run its container here (the
// private dockerd has no NVIDIA runtime), and the agent reads its nvidia-smi fixture once at start, so after pairing a
// client speaks for the machine over the real channel with the machine's own key (as rental-failures.test.ts does):
// it accepts the launch, reports readiness, sends meter receipts, then telemetry that lists the job's GPU and then
// telemetry that no longer does.
import { type TestMachine, RawAgent } from '@ark/control-plane/gateway/testing/raw-agent';
import { ed25519PrivateKeyFromSeed, nodeEd25519Signer } from '@ark/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDockerAvailable } from '../harness/dockerd.js';
import { waitFor } from '../harness/processes.js';
import { nvidiaSmiFixture } from './host-side-helpers.js';
import { DIALECTS, type DockerWorld, expectedCharges, RentalSite, startDockerWorld } from './rental-helpers.js';

describe.skipIf(!isDockerAvailable())('a GPU lost per telemetry', () => {
  let world: DockerWorld;

  beforeAll(async () => {
    world = await startDockerWorld();
  }, 180_000);

  afterAll(async () => {
    await world?.stop();
  }, 60_000);

  describe.each(DIALECTS)('on %s', (dialect) => {
    let site: RentalSite;

    beforeAll(async () => {
      // Readiness is the agent's word here: nothing listens on the endpoint the client reports.
      site = await RentalSite.start(dialect, world, {
        cpEnv: { ARK_READINESS_VERIFY: 'off' },
        agentConfig: { nvidia_smi_fixture: nvidiaSmiFixture },
      });
    }, 180_000);

    afterAll(async () => {
      await site?.stop();
    }, 60_000);

    it('fails the running job gpu_lost, tells the machine to remove it, and credits the renter once', { timeout: 120_000 }, async () => {
      await site.stopAgent();
      const identity = await site.agentIdentity();
      const privateKey = ed25519PrivateKeyFromSeed(Buffer.from(identity.secret_key, 'base64').subarray(0, 32));
      const machine: TestMachine = {
        id: identity.machine_id,
        privateKey,
        publicKeyBase64: identity.public_key,
        sign: nodeEd25519Signer(privateKey),
      };
      const raw = await RawAgent.connect(site.cp.base, machine, identity.control_plane_public_key);
      try {
        const welcome = await raw.handshake();
        let id = welcome.acked_upto + 1000;
        const heartbeat = setInterval(() => raw.heartbeat(), 500);
        try {
          const { available: availableBefore } = await site.renterBalance();
          const { pending: pendingBefore } = await site.hostBalances();
          const { jobId, quote } = await site.reserve({ budgetMicro: 3_000_000n });
          const launch = (await raw.next('command', 20_000)) as unknown as { kind: string; body: Record<string, any> };
          expect(launch.kind).toBe('launch_job');
          const assigned = launch.body.gpu_pci_addresses as string[];
          expect(assigned).toHaveLength(1);
          const status = (s: string, extra: Record<string, unknown> = {}) =>
            raw.send({
              t: 'job_status',
              id: id++,
              job_id: jobId,
              fence: launch.body.fence,
              status: s,
              at: new Date().toISOString(),
              ...extra,
            });
          status('accepted');
          status('ready', {
            access: {
              ssh_port: 2222,
              ssh_host_key_fingerprint: 'SHA256:2mjI0vU4aW7eMvZxEu2Zb8bNf7v7mTdPq5mJQfR2bS8',
              public_host: '127.0.0.1',
              ports: [],
            },
          });
          const running = await site.waitState(jobId, 'RUNNING', 20_000);
          const start = new Date(running.meter_started_at);
          const all = (await site.machine()).body;
          const gpus = (all.manifest?.gpus ?? all.gpus ?? []).map((g: { pci_address: string }) => g.pci_address) as string[];
          const other = gpus.find((pci) => pci !== assigned[0]) ?? '0000:ff:00.0';
          const telemetry = (at: Date, devices: string[]) =>
            raw.send({
              t: 'telemetry',
              id: id++,
              samples: [{ at: at.toISOString(), devices: devices.map((pci_address) => ({ pci_address })) }],
            });
          // Two seconds metered; the job's GPU listed one second in; the receipt; then a sample without it.
          await new Promise((resolve) => setTimeout(resolve, 2100));
          telemetry(new Date(start.getTime() + 1000), [...assigned, other]);
          const end = new Date(start.getTime() + 2000);
          raw.send({
            t: 'meter_receipt',
            id: id++,
            job_id: jobId,
            fence: launch.body.fence,
            meter_seq: 1,
            period_start: start.toISOString(),
            period_end: end.toISOString(),
            runtime_ms: '2000',
            final: false,
          });
          await site.waitJob(jobId, (job) => job.accepted_runtime_ms === '2000', 'the receipt accepted', 20_000);
          telemetry(new Date(), [other]);
          const failed = await site.waitState(jobId, 'FAILED', 20_000);
          expect(failed.close_reason).toBe('gpu_lost');
          // clean_job: the agent stops and removes the container, as for every failed job.
          const clean = (await raw.next('command', 20_000)) as unknown as { kind: string };
          expect(clean.kind).toBe('clean_job');
          // The same loss again: nothing more.
          telemetry(new Date(), [other]);
          await waitFor(async () => raw.received.some((m) => m.t === 'ack' && (m as { upto: number }).upto >= id - 1), {
            timeoutMs: 10_000,
            intervalMs: 20,
            description: 'the last telemetry acknowledged',
          });
          const events = await site.events(jobId);
          const credits = events.filter((event) => event.kind === 'job_credited');
          expect(credits).toHaveLength(1);
          const credit = credits[0]?.data as Record<string, string>;
          expect(credit).toMatchObject({
            reason: 'gpu_lost',
            runtime_ms: '1000',
            healthy_at: new Date(start.getTime() + 1000).toISOString(),
          });
          const charges = expectedCharges(quote, failed);
          const half = expectedCharges(quote, { ...failed, accepted_runtime_ms: '1000' });
          expect(BigInt(credit.credit_micro ?? '0')).toBe(charges.cumulativeMicro - half.cumulativeMicro);
          expect(BigInt(credit.from_host_pending_micro ?? '0')).toBe(charges.hostMicro - half.hostMicro);
          expect(await site.renterBalance()).toEqual({
            available: availableBefore - charges.cumulativeMicro + BigInt(credit.credit_micro ?? '0'),
            held: 0n,
          });
          const host = await site.hostBalances();
          expect(host.pending - pendingBefore).toBe(charges.hostMicro - BigInt(credit.from_host_pending_micro ?? '0'));
          expect(await site.verifyLedger()).toMatchObject({ ok: true, sum_micro: '0', discrepancies: [] });
        } finally {
          clearInterval(heartbeat);
        }
      } finally {
        raw.close();
      }
    });
  });
});
