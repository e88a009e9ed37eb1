import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type {
  HeartbeatMessage,
  JobStatusMessage,
  MachineManifest,
  MeterReceiptMessage,
  ReliableAgentMessage,
  TelemetryMessage,
} from '@ark/shared';
import type { AppContext } from '../http/context.js';
import type { ManualClock } from '../clock.js';
import { ledgerAccounts } from '../domain/ledger/accounts.js';
import { validateTemplateImport } from '../domain/templates/import.js';
import type { TypedApp } from '../http/typed-app.js';
import { commandsAfter, type OutboxCommand } from '../store/outbox.js';
import { runTransfer } from '../store/ledger.js';
import { setCpuListed } from '../store/machines.js';
import { importTemplates } from '../store/templates.js';
import { bearer, type SeededAccount, seedAccount } from './app.js';
import { enrollDirect, sampleManifest } from './hosting.js';

// Renting fixtures: a live machine with a listed offer, a funded renter, quotes and reservations over HTTP, and agent
// messages delivered the way the gateway delivers them (the registered handlers, inside a transaction).

type Json = Record<string, any>;

/** An OpenSSH public key line for a fresh ed25519 key, as `ssh-keygen` writes it. */
export function sshPublicKey(comment = 'renter@laptop'): string {
  const raw = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const sshString = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([sshString(Buffer.from('ssh-ed25519')), sshString(raw)]).toString('base64')} ${comment}`;
}

export const customImage = (c = 'b'): string => `127.0.0.1:5000/ark/job@sha256:${c.repeat(64).slice(0, 64)}`;

export interface LiveMachine {
  host: SeededAccount;
  machineId: string;
  offerId: string;
}

/**
 * A machine enrolled by a fresh host, live (one healthy heartbeat) with its seeded offer listed. One without GPUs is
 * listed as a CPU machine (what its host does for it to be offered) unless `cpuListed` is false.
 */
export async function liveMachine(
  ctx: AppContext,
  app: TypedApp,
  options: { manifest?: MachineManifest; publicKey?: string; cpuListed?: boolean } = {},
): Promise<LiveMachine> {
  const host = await seedAccount(ctx, { role: 'host' });
  const manifest = options.manifest ?? sampleManifest();
  const machineId = await enrollDirect(app, host, {
    manifest,
    ...(options.publicKey !== undefined ? { publicKey: options.publicKey } : {}),
  });
  if (options.cpuListed ?? manifest.gpus.length === 0) await setCpuListed(ctx.store.db, machineId, true, ctx.clock.now());
  await agentHeartbeat(ctx, machineId);
  const offer = await ctx.store.db.selectFrom('offers').select('id').where('machine_id', '=', machineId).executeTakeFirstOrThrow();
  return { host, machineId, offerId: offer.id };
}

/** A deposit into the renter's available balance. */
export async function fund(ctx: AppContext, accountId: string, amountMicro: bigint): Promise<void> {
  await runTransfer(ctx.store, {
    from: ledgerAccounts.external(),
    to: ledgerAccounts.available(accountId),
    amountMicro,
    kind: 'deposit',
    reference: `test-deposit-${randomUUID()}`,
    at: ctx.clock.now(),
  });
}

export async function postQuote(app: TypedApp, renter: SeededAccount, body: Json, key: string = randomUUID()) {
  return app.inject({
    method: 'POST',
    url: '/api/v1/quotes',
    headers: { ...bearer(renter.apiKey), 'idempotency-key': key },
    payload: body,
  });
}

export async function postJob(app: TypedApp, renter: SeededAccount, body: Json, key: string = randomUUID()) {
  return app.inject({ method: 'POST', url: '/api/v1/jobs', headers: { ...bearer(renter.apiKey), 'idempotency-key': key }, payload: body });
}

/** Quote (custom image, 1 GPU, an hour unless told) and reserve; returns the job id and the quote. */
export async function reserveJob(
  app: TypedApp,
  renter: SeededAccount,
  machine: LiveMachine,
  quoteBody: Json = {},
  jobBody: Json = {},
): Promise<{ jobId: string; quote: Json }> {
  const quoted = await postQuote(app, renter, {
    offer_id: machine.offerId,
    gpu_count: 1,
    duration_limit_s: 3600,
    image_digest: customImage(),
    ...quoteBody,
  });
  if (quoted.statusCode !== 201) throw new Error(`quote: ${quoted.statusCode} ${quoted.body}`);
  const quote = quoted.json() as Json;
  const reserved = await postJob(app, renter, { quote_id: quote.quote_id, ssh_public_keys: [sshPublicKey()], ...jobBody });
  if (reserved.statusCode !== 202) throw new Error(`reserve: ${reserved.statusCode} ${reserved.body}`);
  return { jobId: (reserved.json() as Json).job_id, quote };
}

export async function getJob(app: TypedApp, account: SeededAccount, jobId: string): Promise<Json> {
  const response = await app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}`, headers: bearer(account.apiKey) });
  if (response.statusCode !== 200) throw new Error(`job: ${response.statusCode} ${response.body}`);
  return response.json() as Json;
}

let nextMessageId = 1;
const base = () => ({ v: 1 as const, sid: 's1', seq: 1, id: nextMessageId++ });

export function jobStatus(
  jobId: string,
  fence: string | number,
  status: JobStatusMessage['status'],
  at: Date,
  extra: Partial<JobStatusMessage> = {},
): JobStatusMessage {
  return { ...base(), t: 'job_status', job_id: jobId, fence: String(fence), status, at: at.toISOString(), ...extra };
}

export const readyAccess = (sshPort = 2222): NonNullable<JobStatusMessage['access']> => ({
  ssh_port: sshPort,
  ssh_host_key_fingerprint: 'SHA256:2mjI0vU4aW7eMvZxEu2Zb8bNf7v7mTdPq5mJQfR2bS8',
  ports: [
    { container_port: 8080, host_port: 31080, protocol: 'http' },
    { container_port: 9000, host_port: 31090, protocol: 'tcp' },
  ],
});

export function meterReceipt(
  jobId: string,
  fence: string | number,
  meterSeq: number,
  periodStart: Date,
  periodEnd: Date,
  runtimeMs: bigint | number = BigInt(periodEnd.getTime() - periodStart.getTime()),
  final = false,
): MeterReceiptMessage {
  return {
    ...base(),
    t: 'meter_receipt',
    job_id: jobId,
    fence: String(fence),
    meter_seq: meterSeq,
    period_start: periodStart.toISOString(),
    period_end: periodEnd.toISOString(),
    runtime_ms: String(runtimeMs),
    final,
  };
}

/** A telemetry batch: one sample per instant, listing the GPUs (PCI addresses) the agent's collector saw then. */
export function telemetry(samples: readonly { at: Date; gpus: readonly string[] }[]): TelemetryMessage {
  return {
    ...base(),
    t: 'telemetry',
    samples: samples.map((s) => ({ at: s.at.toISOString(), devices: s.gpus.map((pci) => ({ pci_address: pci, utilization_pct: 90 })) })),
  };
}

/** Delivers a reliable agent message the way the gateway does: every registered handler, in one transaction. */
export async function deliver(ctx: AppContext, machineId: string, msg: ReliableAgentMessage): Promise<void> {
  await ctx.store.db.transaction().execute((trx) => ctx.channel.apply(trx, machineId, msg, ctx.clock.now()));
  // Where the gateway wakes the readiness verifier after the commit, a test runs its pass at once (the app's probes
  // verify every endpoint unless the test gave its own: testing/readiness.ts).
  if (msg.t === 'job_status' && msg.status === 'ready') await ctx.services.jobs.readiness.verifyDue(ctx.clock.now());
}

/** A healthy heartbeat through every registered heartbeat handler (liveness, reconciliation). */
export async function agentHeartbeat(
  ctx: AppContext,
  machineId: string,
  runningJobs: HeartbeatMessage['running_jobs'] = [],
): Promise<void> {
  const msg: HeartbeatMessage = {
    v: 1,
    t: 'heartbeat',
    sid: 's1',
    seq: 1,
    at: ctx.clock.now().toISOString(),
    uptime_s: 100,
    healthy: true,
    problems: [],
    running_jobs: runningJobs,
  };
  await ctx.channel.heartbeat(machineId, msg, ctx.clock.now());
}

/** Commands queued for the machine, oldest first. */
export async function queuedCommands(ctx: AppContext, machineId: string): Promise<OutboxCommand[]> {
  return commandsAfter(ctx.store.db, machineId, 0, 1000);
}

/** Moves a job to RUNNING: accepted, then ready with access; returns the meter start. */
export async function runJob(
  t: { ctx: AppContext; clock: ManualClock },
  machineId: string,
  jobId: string,
  access = readyAccess(),
): Promise<Date> {
  await deliver(t.ctx, machineId, jobStatus(jobId, 1, 'accepted', t.clock.now()));
  await t.clock.advance(2000);
  const ready = t.clock.now();
  await deliver(t.ctx, machineId, jobStatus(jobId, 1, 'ready', ready, { access, evidence: { container_running: true } }));
  return ready;
}

/** Imports catalog templates (validated like the operator's import) and returns their ids by name. */
export async function importTestTemplates(ctx: AppContext, items: Json[]): Promise<Record<string, string>> {
  const validated = validateTemplateImport(items);
  if (!validated.ok) throw new Error(validated.errors.join('; '));
  const summary = await ctx.store.db.transaction().execute((trx) => importTemplates(trx, validated.templates, ctx.clock.now()));
  return Object.fromEntries(summary.templates.map((t) => [t.name, t.templateId]));
}

/** An enabled webhook endpoint of the account for `types`: its outbox rows are under test, not their delivery. */
export async function subscribeWebhooks(ctx: AppContext, accountId: string, types: readonly string[]): Promise<void> {
  const now = ctx.clock.now().toISOString();
  await ctx.store.db
    .insertInto('webhook_endpoints')
    .values({
      id: randomUUID(),
      account_id: accountId,
      url: 'https://hooks.example.test/ark',
      description: null,
      event_types: JSON.stringify(types),
      secret_sealed: 'unused',
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      state: 'enabled',
      disabled_reason: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
      removed_at: null,
    })
    .execute();
}
