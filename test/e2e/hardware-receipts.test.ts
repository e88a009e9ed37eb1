// Hardware receipts end to end on each store (issue 24 item 2): the real control plane (`ark-cp serve`) and machines
// paired by the real `ark-agent pair` (so each has a real enrolled identity: its key pair in identity.json).
// First, the agent's real ChannelClient speaking the signed channel with that identity, the test signing receipts with
// the machine's real private key (the named fixtures of control-plane/src/testing/receipts.ts): stored, public,
// checked by the renter with the real `ark` CLI, refusals read from /metrics. Then a real `ark-agent run` whose
// nvidia-smi answers with a recorded real output showing less than the manifest declared: its enrollment self-test
// unlists the machine, opens the host's ticket and sends `machine.unlisted`, verified by a real receiver with
// standardwebhooks; an operator's `ark-cp machines selftest` answered on agreeing hardware lists it again.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FIXTURE_CPU_BENCHMARK, receiptBody } from '@ark/control-plane/testing/receipts';
import { ChannelClient } from '@ark/host-agent/channel/index';
import {
  type CommandMessage,
  type HardwareReceiptBody,
  hardwareReceiptScore,
  signHardwareReceipt,
  verifyHardwareReceipt,
} from '@ark/shared';
import { Webhook } from 'standardwebhooks';
import nacl from 'tweetnacl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { ark, arkConfigDir, expectExit } from './cli-helpers.js';
import { renterKey } from './deposit-helpers.js';
import {
  type AgentSetup,
  agentSetup,
  api,
  type ControlPlane,
  controlPlaneCli,
  hostSession,
  nvidiaSmiFixture,
  pairAgent,
  repoRoot,
  startAgent,
  startControlPlane,
} from './host-side-helpers.js';
import type { SpawnedProcess } from '../harness/processes.js';

const DIALECTS = ['sqlite', 'postgres'] as const;
/** A recorded real `nvidia-smi -q -x` of a machine with one RTX 4090. */
const RTX_4090_FIXTURE = join(repoRoot, 'test', 'fixtures', 'nvidia-smi', 'rtx-4090-driver-535.xml');
const quietLogger = { info() {}, warn() {}, error() {}, debug() {} };

/** A paired machine speaking the channel with its real enrolled identity. */
interface ChannelMachine {
  machineId: string;
  publicKey: string;
  sign(bytes: Uint8Array): Uint8Array;
  client: ChannelClient;
  commands: CommandMessage[];
  setup: AgentSetup;
}

async function waitFor<T>(probe: () => Promise<T | undefined>, description: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Records every webhook delivery; answers 200. */
class Receiver {
  readonly requests: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  server!: Server;
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
  }
  get url(): string {
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening');
    return `http://127.0.0.1:${address.port}/hooks`;
  }
  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

// The two cases use separate machines on one control plane: they run side by side (most of their time is waiting on
// the processes), which keeps the file near its minute on both stores.
describe.concurrent.each(DIALECTS)('hardware receipts over real processes on %s', (dialect) => {
  let database: TestDatabase | undefined;
  let cp: ControlPlane;
  let hostToken: string;
  let renterEnv: NodeJS.ProcessEnv;
  let renterToken: string;
  const machines: ChannelMachine[] = [];
  const agents: SpawnedProcess[] = [];
  const receiver = new Receiver();

  /** `ark-agent run` of a paired machine, its nvidia-smi answering with the recorded output `fixture`. */
  function runAgent(setup: AgentSetup, fixture: string): SpawnedProcess {
    const run = startAgent({ ...setup, env: { ...setup.env, ARK_AGENT_NVIDIA_SMI_FIXTURE: fixture } }, ['run']);
    agents.push(run);
    return run;
  }
  const listed = async (): Promise<string[]> =>
    (await api(cp.base, 'GET', '/api/v1/offers?limit=100', { token: renterToken })).body.items.map(
      (o: { machine_id: string }) => o.machine_id,
    );

  /** Pairs a machine with `ark-agent pair` and connects its channel with the identity the agent stored. */
  async function channelMachine(env: NodeJS.ProcessEnv): Promise<ChannelMachine> {
    const setup = agentSetup({ heartbeat_interval_s: 1, require_docker: false, min_disk_free_bytes: 0 }, env);
    const { machineId } = await pairAgent(cp, hostToken, setup);
    const identity = JSON.parse(readFileSync(join(setup.stateDir, 'identity.json'), 'utf8'));
    expect(identity.machine_id).toBe(machineId);
    const secretKey = new Uint8Array(Buffer.from(identity.secret_key, 'base64'));
    const commands: CommandMessage[] = [];
    const client = new ChannelClient({
      url: identity.channel_url,
      machineId,
      secretKey,
      controlPlanePublicKey: identity.control_plane_public_key,
      stateDir: mkdtempSync(join(tmpdir(), 'ark-e2e-receipts-queue-')),
      agentVersion: '0.1.0',
      onCommand: async (command) => {
        commands.push(command);
      },
      logger: quietLogger,
    });
    await client.start();
    await client.connected();
    const machine: ChannelMachine = {
      machineId,
      publicKey: identity.public_key,
      sign: (bytes) => nacl.sign.detached(bytes, secretKey),
      client,
      commands,
      setup,
    };
    machines.push(machine);
    return machine;
  }

  /** Sends a healthy heartbeat until the machine is live (its seeded offer listed). */
  async function goLive(m: ChannelMachine): Promise<void> {
    await waitFor(async () => {
      m.client.sendHeartbeat({ t: 'heartbeat', at: new Date().toISOString(), uptime_s: 10, healthy: true, problems: [], running_jobs: [] });
      const view = await api(cp.base, 'GET', `/api/v1/hosts/machines/${m.machineId}`, { token: hostToken });
      return view.body?.live === 'live' ? true : undefined;
    }, 'the machine to go live');
  }

  /** The run_selftest the control plane queued for the machine (at enrollment, by the self-test worker). */
  const selftestCommand = (m: ChannelMachine) =>
    waitFor(async () => m.commands.find((c) => c.kind === 'run_selftest'), 'the enrollment run_selftest');

  /** Signs a receipt with the machine's real key and sends it over the signed channel, as the agent does. */
  async function sendReceipt(
    m: ChannelMachine,
    body: HardwareReceiptBody,
    tamper?: (signed: { receipt: string; signature: string }) => void,
  ) {
    const signed = signHardwareReceipt(body, m.sign);
    tamper?.(signed);
    await m.client.enqueue({ t: 'hardware_receipt', ...signed });
    return signed;
  }

  const verification = async (machineId: string) => (await api(cp.base, 'GET', `/api/v1/machines/${machineId}/verification`)).body;
  const refusals = async (): Promise<Record<string, number>> => {
    const text = await (await fetch(`${cp.base}/metrics`)).text();
    return Object.fromEntries(
      [...text.matchAll(/ark_hardware_receipts_refused_total\{reason="(\w+)"\} (\d+)/g)].map((m) => [m[1], Number(m[2])]),
    );
  };

  beforeAll(async () => {
    if (dialect === 'postgres') database = await createTestDatabase();
    await receiver.start();
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: {
        ARK_HEARTBEAT_INTERVAL_S: '1',
        ARK_SELFTEST_WORKER_INTERVAL_MS: '200',
        ARK_WEBHOOK_ALLOW_PRIVATE: 'true',
        ARK_WEBHOOK_POLL_INTERVAL_MS: '100',
      },
    });
    hostToken = await hostSession(cp);
    const key = await renterKey(cp, `receipts-${Date.now()}-${dialect}@example.test`);
    renterToken = key;
    renterEnv = { ARK_URL: cp.base, ARK_API_KEY: key, ARK_CONFIG_DIR: arkConfigDir() };
  }, 120_000);

  afterAll(async () => {
    for (const run of agents) await run.stop('SIGKILL');
    for (const m of machines) {
      await m.client.stop();
      rmSync(dirname(m.setup.stateDir), { recursive: true, force: true });
    }
    await cp?.process.stop('SIGTERM');
    await receiver.close();
    await database?.drop();
    if (cp !== undefined) rmSync(cp.dataDir, { recursive: true, force: true });
  });

  it('stores a receipt signed by the enrolled key, shows it publicly and in offers, and `ark machines verify` checks it', {
    timeout: 60_000,
  }, async () => {
    // No nvidia-smi: a CPU-only machine, as on these CI machines.
    const m = await channelMachine({ ARK_AGENT_NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi' });
    const command = await selftestCommand(m);
    // This marketplace names no benchmark image (ARK_SELFTEST_IMAGE unset): the agents here have no container engine,
    // and a real one answers an identity-only self-test (the benchmark's own end to end is agent-selftest.test.ts).
    expect(command.body).toEqual({ trigger: 'enrollment', timeout_ms: 600_000 });
    await goLive(m);

    const body = receiptBody(m.machineId, 1, new Date(), { command_id: command.command_id });
    const signed = await sendReceipt(m, body);
    const view = await waitFor(async () => {
      const v = await verification(m.machineId);
      return v.receipts?.length === 1 ? v : undefined;
    }, 'the receipt in the public view');
    expect(view.public_key).toBe(m.publicKey);
    expect(view.receipts[0]).toMatchObject({ receipt_seq: 1, receipt: signed.receipt, signature: signed.signature });
    expect(view.score).toBe(hardwareReceiptScore(body));
    expect(view.verified_at).toBe(body.measured_at);
    expect(view.how_to_verify).toContain('ark machines verify');
    // The benchmark figures are exactly the fixture's, as signed.
    expect(JSON.parse(view.receipts[0].receipt).benchmark).toMatchObject(FIXTURE_CPU_BENCHMARK);

    // The renter checks it with the CLI, against the served key and against the key pinned from the host.
    const otherKey = Buffer.from(nacl.sign.keyPair().publicKey).toString('base64');
    const [ok, refused, table] = await Promise.all([
      ark(['machines', 'verify', m.machineId, '--public-key', m.publicKey], { env: renterEnv }),
      // Pinned to another key (a swapped or wrong key): every receipt fails, exit 9.
      ark(['--json', 'machines', 'verify', m.machineId, '--public-key', otherKey], { env: renterEnv }),
      ark(['offers', 'search', '--min-score', String(view.score)], { env: renterEnv }),
    ]);
    expect(expectExit(ok, 0).stderr).toContain(`Verified: 1 receipt(s) signed by ${m.publicKey}`);
    expect(expectExit(refused, 9).json.error).toMatchObject({ code: 'RECEIPT_INVALID', verified: false });

    // Offers show the score and verified_at, filter on min_score; a malformed min_score is a 422 in the envelope.
    expect(expectExit(table, 0).stdout).toContain('SCORE');
    const offered = await api(cp.base, 'GET', `/api/v1/offers?include=verification&min_score=${view.score}&limit=100`, {
      token: renterToken,
    });
    const offer = offered.body.items.find((o: { machine_id: string }) => o.machine_id === m.machineId);
    expect(offer?.verification).toEqual({ score: view.score, verified_at: body.measured_at });
    const row = table.stdout.split('\n').find((line) => line.includes(offer.offer_id));
    expect(row).toContain(String(view.score));
    expect(row).toContain(body.measured_at);
    const above = await api(cp.base, 'GET', `/api/v1/offers?min_score=${view.score + 0.1}&limit=100`, { token: renterToken });
    expect(above.body.items.map((o: { machine_id: string }) => o.machine_id)).not.toContain(m.machineId);
    const malformed = await api(cp.base, 'GET', '/api/v1/offers?min_score=lots', { token: renterToken });
    expect(malformed.status).toBe(422);
    expect(malformed.body.error).toMatchObject({ code: 'VALIDATION_FAILED', retryable: false });
    expect(typeof malformed.body.error.request_id).toBe('string');

    // Forged (another key), tampered (a figure changed after signing), non-canonical and replayed receipts: each is
    // acknowledged (the channel moves on), counted by reason, and never stored.
    const before = await refusals();
    const forger = nacl.sign.keyPair();
    await m.client.enqueue({
      t: 'hardware_receipt',
      ...signHardwareReceipt(receiptBody(m.machineId, 2, new Date()), (b) => nacl.sign.detached(b, forger.secretKey)),
    });
    await sendReceipt(m, receiptBody(m.machineId, 3, new Date()), (s) => {
      s.receipt = s.receipt.replace('"matmul_gflops":480', '"matmul_gflops":4800');
    });
    const spaced = JSON.stringify(JSON.parse(signHardwareReceipt(receiptBody(m.machineId, 4, new Date()), m.sign).receipt), null, 1);
    await m.client.enqueue({
      t: 'hardware_receipt',
      receipt: spaced,
      signature: Buffer.from(m.sign(Buffer.from(spaced, 'utf8'))).toString('base64'),
    });
    await m.client.enqueue({ t: 'hardware_receipt', ...signed });
    const after = await waitFor(async () => {
      const now = await refusals();
      const total = Object.values(now).reduce((a, b) => a + b, 0) - Object.values(before).reduce((a, b) => a + b, 0);
      return total >= 4 ? now : undefined;
    }, 'the four refusals counted');
    const delta = (reason: string) => (after[reason] ?? 0) - (before[reason] ?? 0);
    expect([delta('forged'), delta('tampered'), delta('replayed')]).toEqual([2, 1, 1]);
    // Every one acknowledged: nothing left for the agent to resend.
    await waitFor(async () => (m.client.status().queued === 0 ? true : undefined), 'every receipt acknowledged');
    expect((await verification(m.machineId)).receipts.map((r: { receipt_seq: number }) => r.receipt_seq)).toEqual([1]);
  });

  it("unlists a machine whose manifest overstates its hardware after its own agent's self-test, with the ticket and a verified webhook, and relists it", {
    timeout: 90_000,
  }, async () => {
    // Paired where nvidia-smi shows two L4 (a recorded real `nvidia-smi -q -x`): the manifest declares both.
    const setup = agentSetup(
      { heartbeat_interval_s: 1, require_docker: false, min_disk_free_bytes: 0 },
      { ARK_AGENT_NVIDIA_SMI_FIXTURE: nvidiaSmiFixture },
    );
    const { machineId } = await pairAgent(cp, hostToken, setup);
    const publicKey = JSON.parse(readFileSync(join(setup.stateDir, 'identity.json'), 'utf8')).public_key as string;
    const declared = await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token: hostToken });
    expect(declared.body.manifest.gpus.map((g: { model: string }) => g.model)).toEqual(['NVIDIA L4', 'NVIDIA L4']);
    const hook = await api(cp.base, 'POST', '/api/v1/webhooks', {
      token: hostToken,
      idempotent: true,
      body: { url: receiver.url, event_types: ['machine.unlisted', 'machine.relisted'] },
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);

    // `ark-agent run` on a machine whose nvidia-smi shows one RTX 4090 (another recorded real output): its enrollment
    // self-test reads that, signs the receipt with the enrolled key and sends it; the control plane unlists the machine.
    const overstated = runAgent(setup, RTX_4090_FIXTURE);
    const view = await waitFor(async () => {
      const v = await verification(machineId);
      return v.unlisted ? v : undefined;
    }, `the machine unlisted\n${overstated.output()}`);
    expect(view.contradictions).toEqual([
      { code: 'fewer_gpus', message: 'The machine declares 2 GPU(s) but the self-test found 1.' },
      { code: 'other_model', message: 'Another GPU model: NVIDIA L4 declared, NVIDIA GeForce RTX 4090 found.' },
    ]);
    // The agent's own receipt: the enrollment self-test, what nvidia-smi showed, signed by the machine's key.
    expect(view.receipts).toHaveLength(1);
    const receipt = view.receipts[0];
    const body = JSON.parse(receipt.receipt) as HardwareReceiptBody;
    expect(body).toMatchObject({ machine_id: machineId, trigger: 'enrollment', ok: true });
    expect(body.gpus.map((g) => g.name)).toEqual(['NVIDIA GeForce RTX 4090']);
    expect(verifyHardwareReceipt({ receipt: receipt.receipt, signature: receipt.signature }, publicKey, machineId).ok).toBe(true);
    // Live and heartbeating, yet not offered.
    await waitFor(async () => {
      const machine = await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token: hostToken });
      return machine.body.live === 'live' && machine.body.liveness === 'online' ? true : undefined;
    }, 'the machine live and online');
    expect(await listed()).not.toContain(machineId);

    // The webhook, verified with the endpoint's secret.
    const delivery = await waitFor(
      async () => receiver.requests.find((r) => r.body.includes(machineId) && r.body.includes('machine.unlisted')),
      'the machine.unlisted webhook',
    );
    const event = new Webhook(hook.body.secret).verify(delivery.body, {
      'webhook-id': String(delivery.headers['webhook-id']),
      'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
      'webhook-signature': String(delivery.headers['webhook-signature']),
    }) as { type: string; data: Record<string, unknown> };
    expect(event.type).toBe('machine.unlisted');
    expect(event.data).toMatchObject({ machine_id: machineId, receipt_seq: body.receipt_seq });

    // The host's support case (the one the webhook names) says why.
    const detail = await api(cp.base, 'GET', `/api/v1/tickets/${event.data.ticket_id}`, { token: hostToken });
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ category: 'hardware' });
    expect(detail.body.messages[0].text).toContain('The machine declares 2 GPU(s) but the self-test found 1.');
    expect(detail.body.messages[0].text).toContain('NVIDIA GeForce RTX 4090 found');

    // The host puts the two L4 back; an operator asks for a self-test (`ark-cp machines selftest`): the agent's receipt
    // agrees with the manifest, and the machine is listed again.
    await overstated.stop('SIGTERM', { timeoutMs: 20_000 });
    const agreeing = runAgent(setup, nvidiaSmiFixture);
    const queued = JSON.parse(await controlPlaneCli(cp, ['machines', 'selftest', '--id', machineId]));
    const asked = await waitFor(async () => {
      const v = await verification(machineId);
      const answer = v.receipts.find((r: { receipt: string }) => JSON.parse(r.receipt).command_id === queued.command_id);
      return answer === undefined ? undefined : { view: v, answer };
    }, `the receipt answering the operator's self-test\n${agreeing.output()}`);
    expect(asked.view.unlisted).toBe(false);
    const last = JSON.parse(asked.answer.receipt) as HardwareReceiptBody;
    expect(last).toMatchObject({ trigger: 'command', ok: true });
    expect(last.gpus.map((g) => g.name)).toEqual(['NVIDIA L4', 'NVIDIA L4']);
    await waitFor(async () => ((await listed()).includes(machineId) ? true : undefined), 'the machine offered again');
    const relisted = await waitFor(
      async () => receiver.requests.find((r) => r.body.includes(machineId) && r.body.includes('machine.relisted')),
      'the machine.relisted webhook',
    );
    expect(JSON.parse(relisted.body).data).toMatchObject({ machine_id: machineId, receipt_seq: last.receipt_seq });
    // Newest first: the operator's receipt, then the enrollment's.
    expect(asked.view.receipts.map((r: { receipt_seq: number }) => r.receipt_seq)).toEqual([last.receipt_seq, body.receipt_seq]);
  });
});
