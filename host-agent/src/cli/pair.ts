import { EnrollResponse, type MachineManifest } from '@ark/shared/channel/manifest';
import { PairingCreated, PairingStatus } from '@ark/shared/http/hosts';
import type { Static, TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import nacl from 'tweetnacl';
import { registerFormats } from '../formats.js';
import { jobLimitsFor } from '../jobs/job-limits.js';
import { describeMachine } from '../manifest.js';
import {
  type AgentIdentity,
  type PendingPairing,
  ensureStateDir,
  identityPath,
  readIdentity,
  readPairing,
  removePairing,
  writeIdentity,
  writePairing,
} from '../state.js';
import { type CliContext, CliError } from './context.js';
import { type JsonResponse, describeErrorBody, describeNetworkError, postJson } from './http.js';

export interface PairOptions {
  controlPlane?: string;
  /** Skip the code: enroll with a token the host created (POST /api/v1/hosts/enrollment-tokens). */
  enrollmentToken?: string;
  /** Pair again even though this machine already has an identity. */
  force?: boolean;
}

const POLL_INTERVAL_S_MIN = 1;
const POLL_INTERVAL_S_MAX = 60;
const ENROLL_ATTEMPTS_MAX = 5;
const toBase64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

/**
 * `ark-agent pair`: starts a pairing, prints the user code, polls until a host approves it, enrolls a fresh
 * ed25519 key pair with the enrollment token, and stores the identity owner-only. An interrupted pairing is
 * kept in pairing.json and resumed by the next `pair`.
 */
export async function pairCommand(ctx: CliContext, options: PairOptions): Promise<number> {
  const { config } = ctx;
  const stateDir = config.stateDir;
  const baseUrl = controlPlaneUrl(options.controlPlane ?? config.controlPlaneUrl);

  const existing = await readIdentity(stateDir);
  if (existing !== null && options.force !== true) {
    throw new CliError(
      `this machine is already paired as ${existing.machine_id} (${identityPath(stateDir)}); use --force to pair it again as a new machine`,
    );
  }
  await ensureStateDir(stateDir);

  const logger = ctx.createLogger('stderr');
  const gpu = await ctx.createGpuCollector(logger);
  const [facts, inventory] = await Promise.all([ctx.readMachineFacts(stateDir), gpu.inventory()]);
  const jobLimits = jobLimitsFor(facts, config.jobs.reserve, config.jobs.ceilings);
  const manifest = describeMachine({ facts, inventory, agentVersion: ctx.agentVersion, region: config.region, jobLimits });

  if (options.enrollmentToken !== undefined) {
    const keys = nacl.sign.keyPair();
    await enrollAndSave(ctx, baseUrl, options.enrollmentToken, manifest, {
      publicKey: toBase64(keys.publicKey),
      secretKey: toBase64(keys.secretKey),
    });
    return 0;
  }

  let pairing = await readPairing(stateDir);
  const resumable =
    pairing !== null &&
    pairing.control_plane_url === baseUrl &&
    (pairing.enrollment_token !== undefined || Date.parse(pairing.expires_at) > ctx.now().getTime());
  if (pairing !== null && resumable) {
    ctx.out('Resuming the pairing started earlier.\n');
  } else {
    pairing = await startPairing(ctx, baseUrl, manifest);
    await writePairing(stateDir, pairing);
  }
  const current = pairing as PendingPairing;

  if (current.enrollment_token === undefined) {
    printInstructions(ctx, current);
    current.enrollment_token = await pollUntilApproved(ctx, current);
    current.enrollment_token_received_at = ctx.now().toISOString();
    // The poll that handed out the token consumed the pairing: keep the token before anything else can fail.
    await writePairing(stateDir, current);
    ctx.out('Approved. Enrolling this machine...\n');
  }
  await enrollAndSave(ctx, baseUrl, current.enrollment_token, manifest, { publicKey: current.public_key, secretKey: current.secret_key });
  await removePairing(stateDir);
  return 0;
}

function controlPlaneUrl(raw: string | null | undefined): string {
  if (raw === undefined || raw === null || raw === '') {
    throw new CliError('no control plane given: pass --control-plane https://... or set control_plane_url (ARK_CONTROL_PLANE_URL)', 2);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(`--control-plane must be an http(s) URL, got "${raw}"`, 2);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`--control-plane must be an http(s) URL, got "${raw}"`, 2);
  return url.toString().replace(/\/+$/, '');
}

function checked<T extends TSchema>(schema: T, response: JsonResponse, what: string): Static<T> {
  registerFormats();
  const error = Value.Errors(schema, response.body).First();
  if (error !== undefined) {
    throw new CliError(`the control plane sent an unexpected ${what} (${error.path || '/'}: ${error.message}); is the URL right?`);
  }
  return response.body as Static<T>;
}

async function startPairing(ctx: CliContext, baseUrl: string, manifest: MachineManifest): Promise<PendingPairing> {
  let response: JsonResponse;
  try {
    response = await postJson(ctx.fetch, `${baseUrl}/api/v1/hosts/pairings`, { manifest });
  } catch (error) {
    throw new CliError(`cannot reach the control plane at ${baseUrl}: ${describeNetworkError(error)}`);
  }
  if (response.status !== 201 && response.status !== 200) {
    throw new CliError(`the control plane refused to start a pairing: ${describeErrorBody(response)}`);
  }
  const created = checked(PairingCreated, response, 'pairing');
  const keys = nacl.sign.keyPair();
  return {
    version: 1,
    control_plane_url: baseUrl,
    pairing_id: created.pairing_id,
    poll_secret: created.poll_secret,
    user_code: created.user_code,
    expires_at: created.expires_at,
    poll_interval_s: created.interval_s,
    verification_uri: created.verification_uri,
    public_key: toBase64(keys.publicKey),
    secret_key: toBase64(keys.secretKey),
  };
}

function printInstructions(ctx: CliContext, pairing: PendingPairing): void {
  ctx.out(
    [
      'To pair this machine, sign in to Ark with your host account and approve this code:',
      '',
      `  User code:   ${pairing.user_code}`,
      `  Approve at:  ${pairing.verification_uri ?? `${pairing.control_plane_url} (POST /api/v1/hosts/pairings/approve)`}`,
      `  Expires at:  ${pairing.expires_at}`,
      '',
      `Waiting for approval (checking every ${pollIntervalS(pairing)} s). Interrupted? Run \`ark-agent pair\` again to resume.`,
      '',
    ].join('\n'),
  );
}

function pollIntervalS(pairing: PendingPairing): number {
  return Math.min(POLL_INTERVAL_S_MAX, Math.max(POLL_INTERVAL_S_MIN, Math.round(pairing.poll_interval_s)));
}

/** Polls at the control plane's interval until approved; backs off on errors; gives up when the code expires. */
async function pollUntilApproved(ctx: CliContext, pairing: PendingPairing): Promise<string> {
  const baseS = pollIntervalS(pairing);
  let waitS = baseS;
  const expiresAtMs = Date.parse(pairing.expires_at);
  for (;;) {
    await ctx.sleep(waitS * 1000);
    let response: JsonResponse;
    try {
      response = await postJson(ctx.fetch, `${pairing.control_plane_url}/api/v1/hosts/pairings/poll`, {
        pairing_id: pairing.pairing_id,
        poll_secret: pairing.poll_secret,
      });
    } catch (error) {
      if (ctx.now().getTime() > expiresAtMs)
        throw new CliError(`the code expired while the control plane was unreachable: ${describeNetworkError(error)}`);
      waitS = Math.min(POLL_INTERVAL_S_MAX, waitS * 2);
      ctx.err(`ark-agent: control plane unreachable (${describeNetworkError(error)}); retrying in ${waitS} s\n`);
      continue;
    }
    if (response.status === 404) {
      await removePairing(ctx.config.stateDir);
      throw new CliError('the control plane no longer knows this pairing; run `ark-agent pair` again for a new code');
    }
    if (response.status === 429 || response.status >= 500) {
      waitS = Math.min(POLL_INTERVAL_S_MAX, waitS * 2);
      continue;
    }
    if (response.status !== 200) throw new CliError(`polling the pairing failed: ${describeErrorBody(response)}`);
    waitS = baseS;
    const status = checked(PairingStatus, response, 'pairing status');
    switch (status.status) {
      case 'pending':
        continue;
      case 'expired':
        await removePairing(ctx.config.stateDir);
        throw new CliError('the code expired before anyone approved it; run `ark-agent pair` again for a new code');
      case 'approved':
        if (status.enrollment_token === undefined)
          throw new CliError('the control plane approved the pairing but sent no enrollment token');
        return status.enrollment_token;
      case 'consumed':
        await removePairing(ctx.config.stateDir);
        throw new CliError('this pairing was already used (its enrollment token went to an earlier poll); run `ark-agent pair` again');
    }
  }
}

async function enrollAndSave(
  ctx: CliContext,
  baseUrl: string,
  enrollmentToken: string,
  manifest: MachineManifest,
  keys: { publicKey: string; secretKey: string },
): Promise<void> {
  const body = { enrollment_token: enrollmentToken, public_key: keys.publicKey, manifest };
  let response: JsonResponse | undefined;
  for (let attempt = 1; attempt <= ENROLL_ATTEMPTS_MAX; attempt += 1) {
    try {
      response = await postJson(ctx.fetch, `${baseUrl}/api/v1/agents/enroll`, body);
      if (response.status < 500 && response.status !== 429) break;
    } catch (error) {
      if (attempt === ENROLL_ATTEMPTS_MAX) throw new CliError(`enrollment failed: cannot reach ${baseUrl}: ${describeNetworkError(error)}`);
    }
    if (attempt < ENROLL_ATTEMPTS_MAX) await ctx.sleep(Math.min(30_000, 1000 * 2 ** attempt));
  }
  if (response === undefined || (response.status !== 200 && response.status !== 201)) {
    const detail = response === undefined ? 'no answer' : describeErrorBody(response);
    if (response !== undefined && response.status >= 400 && response.status < 500) await removePairing(ctx.config.stateDir);
    throw new CliError(`enrollment refused: ${detail}; run \`ark-agent pair\` again`);
  }
  const enrolled = checked(EnrollResponse, response, 'enrollment answer');
  const identity: AgentIdentity = {
    version: 1,
    machine_id: enrolled.machine_id,
    public_key: keys.publicKey,
    secret_key: keys.secretKey,
    control_plane_public_key: enrolled.control_plane_public_key,
    channel_url: enrolled.channel_url,
    control_plane_url: baseUrl,
    enrolled_at: ctx.now().toISOString(),
  };
  await writeIdentity(ctx.config.stateDir, identity);
  ctx.out(
    [
      `Paired: this machine is ${identity.machine_id}.`,
      `Identity saved to ${identityPath(ctx.config.stateDir)} (readable by its owner only).`,
      'Start the daemon with `ark-agent run` (or `systemctl start ark-agent`).',
      '',
    ].join('\n'),
  );
}
