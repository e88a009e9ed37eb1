// Admissions end to end (issue 12): the real control plane (`ark-cp serve`) on SQLite and on PostgreSQL, a real anvil
// playing Base with TestUsdc at the Base USDC address, and a machine that speaks the signed agent channel frame by
// frame (RawAgent: the cheapest real path to a running, metered job, with no container engine). With admission paused,
// reservations and offer commits are refused, a deposit is HELD, and the running job keeps being metered; an acceptance
// authorization lets exactly one operation through, once; resuming credits the HELD deposit. API keys never reach
// an admin route.
import { randomBytes, randomUUID } from 'node:crypto';
import { RawAgent, type TestMachine, testMachine } from '@ark/control-plane/gateway/testing/raw-agent';
import { sampleManifest } from '@ark/control-plane/testing/hosting';
import { customImage, sshPublicKey } from '@ark/control-plane/testing/renting';
import type { Address, Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { waitFor } from '../harness/processes.js';
import { startSshEndpoint } from '../harness/ssh-endpoint.js';
import { type DepositChain, randomDepositXpub, setupDepositChain } from './deposit-helpers.js';
import { api, type ControlPlane, controlPlaneCli, hostSession, startControlPlane } from './host-side-helpers.js';
import { adminSession, call, PASSWORD, USDC } from './payout-helpers.js';

const AUTHORIZATION_HEADER = 'ark-acceptance-authorization';

describe.each(['sqlite', 'postgres'] as const)('admissions on %s', (dialect) => {
  let anvil: Anvil;
  let chain: DepositChain;
  let database: TestDatabase | null = null;
  let cp: ControlPlane;
  let admin = '';
  let adminKey = '';
  let hostToken = '';
  let renterKey = '';
  let renterId = '';
  let hostId = '';
  let depositAddress: Address;
  let machine: TestMachine;
  let agent: RawAgent;
  let offer: { offer_id: string; offer_version: string };
  let runningJobId = '';
  let meterSeq = 0;
  let meteredMs = 0n;
  let meterFrom = new Date();
  let messageId = 0;
  let heldDeposit: Hex;
  let pairedWhilePaused: { machine: TestMachine; agent: RawAgent } | undefined;
  let beating: NodeJS.Timeout | undefined;

  /** A machine enrolled over HTTP that speaks the channel itself (signed frames), handshaken. */
  const enrollMachine = async (): Promise<{ machine: TestMachine; agent: RawAgent; ackedUpto: number }> => {
    const token = await call(cp, 'POST', '/api/v1/hosts/enrollment-tokens', { token: hostToken });
    expect(token.status).toBe(201);
    const enrolling = testMachine();
    const enrolled = await api(cp.base, 'POST', '/api/v1/agents/enroll', {
      body: {
        enrollment_token: token.body.enrollment_token,
        public_key: enrolling.publicKeyBase64,
        // Eight GPUs: every reservation of the test takes one and none has to wait for another to end.
        manifest: sampleManifest({
          gpus: Array.from({ length: 8 }, (_, i) => ({
            pci_address: `00000000:0${i + 1}:00.0`,
            model: 'NVIDIA GeForce RTX 4090',
            vram_bytes: '25757220864',
          })),
        }),
      },
    });
    expect(enrolled.status).toBe(201);
    enrolling.id = enrolled.body.machine_id;
    const connected = await RawAgent.connect(cp.base, enrolling, enrolled.body.control_plane_public_key);
    return { machine: enrolling, agent: connected, ackedUpto: (await connected.handshake()).acked_upto };
  };
  const listedOffer = async (machineId: string) =>
    ((await renter('GET', '/api/v1/offers?limit=100')).body.items as any[]).find((item) => item.machine_id === machineId);
  const liveState = async (machineId: string) =>
    (await call(cp, 'GET', `/api/v1/hosts/machines/${machineId}`, { token: hostToken })).body.live as string;

  const cli = async (args: string[]) => JSON.parse(await controlPlaneCli(cp, args));
  const renter = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    call(cp, method, path, { token: renterKey, body, headers });
  const quote = async (): Promise<string> => {
    const answer = await renter('POST', '/api/v1/quotes', {
      offer_id: offer.offer_id,
      gpu_count: 1,
      duration_limit_s: 600,
      image_digest: customImage(),
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    return answer.body.quote_id as string;
  };
  const reserve = async (headers?: Record<string, string>) =>
    renter('POST', '/api/v1/jobs', { quote_id: await quote(), ssh_public_keys: [sshPublicKey()] }, headers);
  const job = async (jobId: string) => (await renter('GET', `/api/v1/jobs/${jobId}`)).body;
  const balance = async () => (await renter('GET', '/api/v1/billing/balance?limit=100')).body;
  const depositOf = async (txHash: Hex) =>
    ((await balance()).deposits.items as any[]).find((deposit) => deposit.tx_hash === txHash.toLowerCase()) ?? null;
  const commitOffer = (headers?: Record<string, string>) =>
    call(cp, 'POST', `/api/v1/hosts/machines/${machine.id}/offer`, {
      token: hostToken,
      headers,
      body: {
        rate_micro_per_hour: '40000000',
        included_quotas: { included_disk_gib: 10, included_egress_gib: 10 },
        available_from: new Date(Date.now() - 60_000).toISOString(),
        available_until: new Date(Date.now() + 7 * 86_400_000).toISOString(),
        expected_version: offer.offer_version,
      },
    });
  const setAdmissions = (enabled: boolean, reason: string) =>
    call(cp, 'POST', '/api/v1/admin/admissions', { token: admin, body: { enabled, reason } });
  const authorize = async (accountId: string, kind: string): Promise<string> => {
    const issued = await call(cp, 'POST', '/api/v1/admin/acceptance-authorizations', {
      token: admin,
      body: { account_id: accountId, kind, expires_at: new Date(Date.now() + 600_000).toISOString(), reason: 'support case 42' },
    });
    expect(issued.status, JSON.stringify(issued.body)).toBe(201);
    expect(issued.body).toMatchObject({ account_id: accountId, kind, consumed_at: null });
    return issued.body.id as string;
  };
  /** One signed meter receipt for the running job, covering the time since the last; waits for its ack. */
  const meter = async () => {
    const end = new Date();
    const runtimeMs = BigInt(end.getTime() - meterFrom.getTime());
    const id = ++messageId;
    agent.send({
      t: 'meter_receipt',
      id,
      job_id: runningJobId,
      fence: '1',
      meter_seq: ++meterSeq,
      period_start: meterFrom.toISOString(),
      period_end: end.toISOString(),
      runtime_ms: runtimeMs.toString(),
      final: false,
    });
    meterFrom = end;
    meteredMs += runtimeMs;
    await waitFor(() => agent.received.some((message) => message.t === 'ack' && message.upto >= id), {
      timeoutMs: 10_000,
      intervalMs: 20,
      description: `meter receipt ${id} acknowledged`,
    });
  };

  beforeAll(async () => {
    anvil = await startAnvil();
    chain = await setupDepositChain(anvil);
    if (dialect === 'postgres') database = await createTestDatabase();
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: {
        ARK_CHAINS: chain.chainsFile,
        ARK_DEPOSIT_XPUB: randomDepositXpub(),
        ARK_SECRET_KEY: randomBytes(32).toString('hex'),
        ARK_CHAIN_POLL_INTERVAL_MS: '100',
        ARK_HEARTBEAT_INTERVAL_S: '1',
        ARK_METER_INTERVAL_S: '1',
        ARK_SEED_RATE_MICRO_PER_HOUR: '36000000',
        // Two jobs at this rate pass the default spend-rate cap (50 USDC/h): the cap is spend-cap.test.ts's business.
        ARK_SPEND_RATE_CAP_MICRO_PER_HOUR: '1000000000000000',
      },
    });
    const tag = randomBytes(4).toString('hex');
    const adminEmail = `admin-${tag}@example.test`;
    const renterEmail = `renter-${tag}@example.test`;
    // Each CLI run is a process start: the three accounts are made side by side.
    const [, hostSessionToken, renterKeyCreated] = await Promise.all([
      (async () => {
        await cli(['accounts', 'create', '--email', adminEmail, '--role', 'admin', '--password', PASSWORD, '--verified']);
        adminKey = (await cli(['keys', 'create', '--email', adminEmail, '--scopes', 'renter', '--label', 'admin-key'])).secret;
        admin = await adminSession(cp, adminEmail);
      })(),
      hostSession(cp),
      (async () => {
        await cli(['accounts', 'create', '--email', renterEmail, '--role', 'renter', '--verified']);
        const [key] = await Promise.all([
          cli(['keys', 'create', '--email', renterEmail, '--scopes', 'renter', '--label', 'e2e']),
          cli(['ledger', 'credit', '--email', renterEmail, '--amount-micro', String(100n * USDC), '--reason', 'e2e']),
        ]);
        return key.secret as string;
      })(),
    ]);
    hostToken = hostSessionToken;
    renterKey = renterKeyCreated;
    renterId = (await renter('GET', '/api/v1/account')).body.account_id;
    hostId = (await call(cp, 'GET', '/api/v1/account', { token: hostToken })).body.account_id;
    depositAddress = (await renter('GET', '/api/v1/billing/deposit-address')).body.address;

    // The machine enrolls over HTTP and speaks the channel itself; its first healthy heartbeat lists the seeded offer.
    ({ machine, agent, ackedUpto: messageId } = await enrollMachine());
    // The machine stays online (and its job bound) as an agent keeps it: a heartbeat well inside the 1 s interval.
    beating = setInterval(() => agent.heartbeat(), 400);
    offer = await waitFor(
      async () => {
        agent.heartbeat();
        return listedOffer(machine.id);
      },
      { timeoutMs: 30_000, intervalMs: 300, description: 'the seeded offer listed' },
    );

    // One job RUNNING before the pause: reserved, launched on the channel, ready, metered once.
    const reserved = await reserve();
    expect(reserved.status).toBe(202);
    runningJobId = reserved.body.job_id;
    await waitFor(() => agent.received.some((message) => message.t === 'command' && message.kind === 'launch_job'), {
      timeoutMs: 15_000,
      intervalMs: 20,
      description: 'launch_job on the channel',
    });
    const status = (state: string, extra: Record<string, unknown> = {}) =>
      agent.send({
        t: 'job_status',
        id: ++messageId,
        job_id: runningJobId,
        fence: '1',
        status: state,
        at: new Date().toISOString(),
        ...extra,
      });
    status('accepted');
    meterFrom = new Date();
    // A real SSH endpoint with its own host key: the control plane verifies readiness there before the job runs.
    const endpoint = await startSshEndpoint({ unref: true });
    status('ready', {
      evidence: { container_running: true },
      access: { ssh_port: endpoint.port, ssh_host_key_fingerprint: endpoint.fingerprint, public_host: endpoint.host, ports: [] },
    });
    await waitFor(async () => (await job(runningJobId)).state === 'RUNNING', {
      timeoutMs: 15_000,
      intervalMs: 100,
      description: 'the job RUNNING',
    });
    meterFrom = new Date((await job(runningJobId)).meter_started_at);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await meter();
    expect(BigInt((await job(runningJobId)).accepted_runtime_ms)).toBe(meteredMs);
  }, 300_000);

  afterAll(async () => {
    clearInterval(beating);
    agent?.close();
    pairedWhilePaused?.agent.close();
    await cp?.process.stop('SIGKILL');
    await anvil?.stop();
    await database?.drop();
  });

  it('paused: reservations and offer commits are refused, a deposit is HELD, the running job is still metered', async () => {
    const paused = await setAdmissions(false, 'incident 7: payment rail under review');
    expect(paused.status).toBe(202);
    expect(paused.body).toMatchObject({ enabled: false, reason: 'incident 7: payment rail under review' });
    const state = await call(cp, 'GET', '/api/v1/admin/admissions', { token: admin });
    expect(state.body).toMatchObject({ enabled: false, changed_at: expect.any(String) });

    const refused = await reserve();
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: 'ADMISSIONS_PAUSED', retryable: true });
    const offerRefused = await commitOffer();
    expect(offerRefused.status).toBe(503);
    expect(offerRefused.body.error.code).toBe('ADMISSIONS_PAUSED');

    const availableBefore = (await balance()).available_micro;
    const hash = await chain.sendUsdc(depositAddress, 3n * USDC);
    await anvil.mine(2);
    const held = await waitFor(async () => ((await depositOf(hash))?.state === 'HELD' ? depositOf(hash) : null), {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the deposit HELD',
    });
    expect(held.reason).toBe('admissions_paused');
    expect((await balance()).available_micro).toBe(availableBefore);
    expect((await call(cp, 'GET', '/api/v1/admin/admissions', { token: admin })).body.held_deposits).toBe(1);

    // The running job is not touched by the pause: its receipts are still accepted and charged.
    const before = await job(runningJobId);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await meter();
    const after = await job(runningJobId);
    expect(after.state).toBe('RUNNING');
    expect(BigInt(after.accepted_runtime_ms)).toBe(meteredMs);
    expect(BigInt(after.cumulative_charge_micro)).toBeGreaterThan(BigInt(before.cumulative_charge_micro));
    heldDeposit = hash;

    // A machine paired while paused does not go live: its healthy heartbeats leave its seeded offer unlisted.
    pairedWhilePaused = await enrollMachine();
    for (let i = 0; i < 3; i++) {
      pairedWhilePaused.agent.heartbeat();
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(await liveState(pairedWhilePaused.machine.id)).toBe('waiting');
    expect(await listedOffer(pairedWhilePaused.machine.id)).toBeUndefined();
  });

  it('an acceptance authorization lets exactly one operation of its account and kind through, once', async () => {
    const pass = await authorize(renterId, 'reservation');
    // Another kind, another account: not this one's pass.
    const wrongKind = await commitOffer({ [AUTHORIZATION_HEADER]: pass });
    expect(wrongKind.status).toBe(403);
    expect(wrongKind.body.error.code).toBe('ACCEPTANCE_AUTHORIZATION_INVALID');

    const through = await reserve({ [AUTHORIZATION_HEADER]: pass });
    expect(through.status).toBe(202);
    expect(through.body.state).toBe('RESERVED');
    const again = await reserve({ [AUTHORIZATION_HEADER]: pass });
    expect(again.status).toBe(403);
    expect(again.body.error).toMatchObject({ code: 'ACCEPTANCE_AUTHORIZATION_INVALID', message: expect.stringContaining('already used') });
    const without = await reserve();
    expect(without.status).toBe(503);

    const hostPass = await authorize(hostId, 'offer_publication');
    const published = await commitOffer({ [AUTHORIZATION_HEADER]: hostPass });
    expect(published.status).toBe(202);
    offer = { ...offer, offer_version: published.body.offer_version };
    const secondCommit = await commitOffer({ [AUTHORIZATION_HEADER]: hostPass });
    expect(secondCommit.status).toBe(403);

    // Both uses are in the audit log with the admin, as is the pause.
    const audit = await call(cp, 'GET', '/api/v1/admin/audit?limit=100', { token: admin });
    const actions = (audit.body.items as any[]).map((entry) => entry.action);
    expect(actions).toEqual(expect.arrayContaining(['admin.admissions.paused', 'admin.acceptance_authorization.issued']));
  });

  it('resuming credits the HELD deposit and admits again', async () => {
    const availableBefore = BigInt((await balance()).available_micro);
    const resumed = await setAdmissions(true, 'incident 7 closed');
    expect(resumed.status).toBe(202);
    expect(resumed.body.enabled).toBe(true);
    const credited = await waitFor(async () => ((await depositOf(heldDeposit))?.state === 'CREDITED' ? depositOf(heldDeposit) : null), {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the HELD deposit credited',
    });
    expect(credited.credited_micro).toBe(String(3n * USDC));
    expect(BigInt((await balance()).available_micro)).toBe(availableBefore + 3n * USDC);
    expect((await reserve()).status).toBe(202);
    // The machine paired while paused goes live on its next healthy heartbeat.
    const paired = pairedWhilePaused;
    if (!paired) throw new Error('needs the machine of the first test');
    await waitFor(
      async () => {
        paired.agent.heartbeat();
        return listedOffer(paired.machine.id);
      },
      { timeoutMs: 15_000, intervalMs: 300, description: 'the machine paired while paused listed after the resume' },
    );
    expect(await liveState(paired.machine.id)).toBe('live');
    expect(JSON.parse(await controlPlaneCli(cp, ['ledger', 'verify'])).ok).toBe(true);
  });

  it('an API key never reaches an admin route: 403 on every one', async () => {
    const document = (await fetch(`${cp.base}/openapi.json`).then((response) => response.json())) as { paths: Record<string, any> };
    const adminOperations = Object.entries(document.paths)
      .filter(([path]) => path.startsWith('/api/v1/admin/'))
      .flatMap(([path, item]) => Object.keys(item).map((method) => ({ method: method.toUpperCase(), path })));
    expect(adminOperations.length).toBeGreaterThanOrEqual(5);
    for (const { method, path } of adminOperations) {
      const concrete = path.replace(/\{[^}]+\}/g, randomUUID());
      const answer = await call(cp, method, concrete, { token: adminKey, body: method === 'GET' ? undefined : {} });
      expect({ method, path, status: answer.status }).toEqual({ method, path, status: 403 });
    }
  });
});
