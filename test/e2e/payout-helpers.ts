// Money out end to end: the payout wallet (a fresh key in a 0600 file, funded on anvil), admin sessions with TOTP,
// and a host that earns through a metered job on the signed agent channel (RawAgent: no container engine needed).
import { randomBytes, randomUUID } from 'node:crypto';
import { totpCodeAt } from '@ark/control-plane/domain/accounts/totp';
import { RawAgent, testMachine } from '@ark/control-plane/gateway/testing/raw-agent';
import { sampleManifest } from '@ark/control-plane/testing/hosting';
import { customImage, sshPublicKey } from '@ark/control-plane/testing/renting';
import type { Address } from 'viem';
import { expect } from 'vitest';
import type { Anvil } from '../harness/anvil.js';
import { waitFor } from '../harness/processes.js';
import { startSshEndpoint } from '../harness/ssh-endpoint.js';
import { api, type ControlPlane, controlPlaneCli } from './host-side-helpers.js';
import { PASSWORD } from './payout-chain.js';

export { fundedPayoutWallet, PASSWORD, type PayoutWalletSetup, randomAddress, transfersOnChain, USDC } from './payout-chain.js';

/** fetch with any headers, the body parsed; POSTs carry a fresh Idempotency-Key unless one is given. */
export async function call(
  cp: Pick<ControlPlane, 'base'>,
  method: string,
  path: string,
  options: { token: string; body?: unknown; headers?: Record<string, string> },
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${options.token}`, ...options.headers };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (method === 'POST') headers['idempotency-key'] ??= randomUUID();
  const response = await fetch(`${cp.base}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

/** Creates an account with the CLI, signs in and steps up with the password: a session that may withdraw. */
export async function steppedUpSession(cp: ControlPlane, role: 'renter' | 'host', email: string): Promise<string> {
  await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', role, '--password', PASSWORD, '--verified']);
  const signIn = await api(cp.base, 'POST', '/api/v1/auth/sessions', { body: { email, password: PASSWORD } });
  expect([200, 201]).toContain(signIn.status);
  const token = signIn.body.session_token as string;
  expect((await api(cp.base, 'POST', '/api/v1/account/step-up', { token, body: { password: PASSWORD } })).status).toBe(200);
  return token;
}

/**
 * Signs in over HTTP with the password, steps up with it and starts a TOTP enrollment: answers the session token
 * and the TOTP secret, not yet confirmed.
 */
export async function signInEnrollingTotp(cp: ControlPlane, email: string): Promise<{ token: string; secret: string }> {
  const signIn = await api(cp.base, 'POST', '/api/v1/auth/sessions', { body: { email, password: PASSWORD } });
  expect([200, 201]).toContain(signIn.status);
  const token = signIn.body.session_token as string;
  expect((await api(cp.base, 'POST', '/api/v1/account/step-up', { token, body: { password: PASSWORD } })).status).toBe(200);
  const enrolled = await api(cp.base, 'POST', '/api/v1/account/totp', { token });
  expect([200, 201]).toContain(enrolled.status);
  return { token, secret: enrolled.body.secret as string };
}

/** An admin signed in over HTTP with TOTP enrolled and a fresh TOTP step-up on the session. */
export async function adminSession(cp: ControlPlane, email: string): Promise<string> {
  const { token, secret } = await signInEnrollingTotp(cp, email);
  // The previous period's code proves the seed, the current one steps up (a used step never counts twice).
  const confirmed = await api(cp.base, 'POST', '/api/v1/account/totp/confirm', {
    token,
    body: { totp_code: totpCodeAt(secret, new Date(Date.now() - 30_000)) },
  });
  expect(confirmed.status).toBe(200);
  const stepUp = await api(cp.base, 'POST', '/api/v1/account/step-up', { token, body: { totp_code: totpCodeAt(secret, new Date()) } });
  expect(stepUp.body).toMatchObject({ method: 'totp' });
  return token;
}

/** Registers a withdrawal address over HTTP (the session must be stepped up); answers its id. */
export async function addWithdrawalAddress(cp: ControlPlane, token: string, address: Address): Promise<string> {
  const added = await call(cp, 'POST', '/api/v1/withdrawal-addresses', { token, body: { address, label: 'e2e' } });
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  return added.body.id as string;
}

/** Waits for a request to reach `state`, mining a block each poll so finality moves on. */
export async function waitWithdrawal(
  cp: ControlPlane,
  anvil: Anvil,
  token: string,
  id: string,
  state: string,
  timeoutMs = 60_000,
): Promise<any> {
  return waitFor(
    async () => {
      const got = await call(cp, 'GET', `/api/v1/withdrawals/${id}`, { token });
      if (got.status !== 200) throw new Error(`GET withdrawal ${id}: ${got.status} ${JSON.stringify(got.body)}`);
      if (got.body.state === state) return got.body;
      if (['CONFIRMED', 'FAILED'].includes(got.body.state)) throw new Error(`withdrawal ${id} ended ${got.body.state}, not ${state}`);
      await anvil.mine(1);
      return null;
    },
    { timeoutMs, intervalMs: 100, description: `withdrawal ${id} ${state}` },
  );
}

/**
 * A host earns: a machine enrolls and speaks the channel (RawAgent), the renter reserves it, the job runs and one
 * signed meter receipt covers `runtimeMs`; the charge moves the host's share to its pending earnings (payable once they mature). Answers the job id.
 */
export async function hostEarns(
  cp: ControlPlane,
  input: { hostToken: string; renterToken: string; runtimeMs: number },
): Promise<{ jobId: string; agent: RawAgent }> {
  const token = await call(cp, 'POST', '/api/v1/hosts/enrollment-tokens', { token: input.hostToken });
  expect(token.status).toBe(201);
  const machine = testMachine();
  const enrolled = await api(cp.base, 'POST', '/api/v1/agents/enroll', {
    body: { enrollment_token: token.body.enrollment_token, public_key: machine.publicKeyBase64, manifest: sampleManifest() },
  });
  expect(enrolled.status).toBe(201);
  machine.id = enrolled.body.machine_id;
  const agent = await RawAgent.connect(cp.base, machine, enrolled.body.control_plane_public_key);
  let messageId = (await agent.handshake()).acked_upto;
  // The control plane closes a channel silent for three heartbeat intervals (3 s in the tests that set 1 s), and the
  // waits below (readiness checked over SSH, the metered period) are longer than that on a loaded machine.
  const stopHeartbeats = agent.keepAlive(500);
  try {
    const offer = await waitFor(
      async () => {
        agent.heartbeat();
        const listed = await call(cp, 'GET', '/api/v1/offers?limit=100', { token: input.renterToken });
        return (listed.body.items as any[]).find((item) => item.machine_id === machine.id);
      },
      { timeoutMs: 30_000, intervalMs: 300, description: 'the seeded offer listed' },
    );
    const quote = await call(cp, 'POST', '/api/v1/quotes', {
      token: input.renterToken,
      body: { offer_id: offer.offer_id, gpu_count: 1, duration_limit_s: 600, image_digest: customImage() },
    });
    expect(quote.status, JSON.stringify(quote.body)).toBe(201);
    const reserved = await call(cp, 'POST', '/api/v1/jobs', {
      token: input.renterToken,
      body: { quote_id: quote.body.quote_id, ssh_public_keys: [sshPublicKey()] },
    });
    expect(reserved.status, JSON.stringify(reserved.body)).toBe(202);
    const jobId = reserved.body.job_id as string;
    await waitFor(() => agent.received.some((m) => m.t === 'command' && m.kind === 'launch_job'), {
      timeoutMs: 15_000,
      intervalMs: 20,
      description: 'launch_job on the channel',
    });
    const status = (state: string, extra: Record<string, unknown> = {}) =>
      agent.send({ t: 'job_status', id: ++messageId, job_id: jobId, fence: '1', status: state, at: new Date().toISOString(), ...extra });
    status('accepted');
    // A real SSH endpoint with its own host key: the control plane verifies readiness there before the job runs.
    const endpoint = await startSshEndpoint({ unref: true });
    status('ready', {
      evidence: { container_running: true },
      access: { ssh_port: endpoint.port, ssh_host_key_fingerprint: endpoint.fingerprint, public_host: endpoint.host, ports: [] },
    });
    const running = await waitFor(
      async () => {
        const job = await call(cp, 'GET', `/api/v1/jobs/${jobId}`, { token: input.renterToken });
        return job.body.state === 'RUNNING' ? job.body : null;
      },
      { timeoutMs: 15_000, intervalMs: 100, description: 'the job RUNNING' },
    );
    const from = new Date(running.meter_started_at);
    const end = new Date(Math.max(Date.now(), from.getTime() + input.runtimeMs));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, end.getTime() - Date.now())));
    const id = ++messageId;
    agent.send({
      t: 'meter_receipt',
      id,
      job_id: jobId,
      fence: '1',
      meter_seq: 1,
      period_start: from.toISOString(),
      period_end: end.toISOString(),
      runtime_ms: String(input.runtimeMs),
      final: false,
    });
    await waitFor(
      () => {
        if (agent.ws.readyState !== agent.ws.OPEN)
          throw new Error(`the channel closed before the receipt's ack (readyState ${agent.ws.readyState})`);
        return agent.received.some((m) => m.t === 'ack' && m.upto >= id);
      },
      { timeoutMs: 30_000, intervalMs: 20, description: 'the meter receipt acknowledged' },
    );
    return { jobId, agent };
  } finally {
    stopHeartbeats();
  }
}

export const randomTag = (): string => randomBytes(4).toString('hex');
