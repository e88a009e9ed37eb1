import { sign as cryptoSign, generateKeyPairSync, randomInt, randomUUID } from 'node:crypto';
import type { HeartbeatMessage, MachineManifest, NettestReceiptMessage, TelemetryMessage, TelemetrySample } from '@ark/shared';
import type { AppContext } from '../http/context.js';
import type { TypedApp } from '../http/typed-app.js';
import { insertAccount } from '../store/accounts.js';
import type { Executor } from '../store/db.js';
import { insertMachine } from '../store/machines.js';
import { bearer, type SeededAccount } from './app.js';
import { storeEnrollmentToken } from './credentials.js';

// Host-side test fixtures: a manifest, the pairing flow over HTTP, and agent messages as the gateway hands them over.

export function sampleManifest(overrides: Partial<MachineManifest> = {}): MachineManifest {
  return {
    hostname: 'rig-01',
    gpus: [
      { pci_address: '00000000:01:00.0', model: 'NVIDIA GeForce RTX 4090', vram_bytes: '25757220864' },
      { pci_address: '00000000:02:00.0', model: 'NVIDIA GeForce RTX 4090', vram_bytes: '25757220864' },
    ],
    cpu: { model: 'AMD Ryzen 9 7950X', cores: 16 },
    ram_bytes: '137438953472',
    disk_bytes: '2000398934016',
    os: 'Ubuntu 24.04',
    driver_version: '550.54.14',
    cuda_version: '12.4',
    agent_version: '0.1.0',
    region: 'eu-west',
    ...overrides,
  };
}

/** A fresh raw ed25519 public key, base64 (the last 32 bytes of its SPKI DER), as an agent sends it. */
export const machinePublicKey = (): string =>
  generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');

/** A machine's ed25519 key pair: the base64 public key it enrolls with, and a signer of bytes (its receipts). */
export interface MachineKeyPair {
  publicKey: string;
  sign(bytes: Uint8Array): Uint8Array;
}

export function machineKeyPair(): MachineKeyPair {
  const pair = generateKeyPairSync('ed25519');
  return {
    publicKey: pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64'),
    sign: (bytes) => cryptoSign(null, bytes, pair.privateKey),
  };
}

/** A random private address, so per-address limits of one call never touch another. */
export const randomAddress = (): string => `127.${randomInt(256)}.${randomInt(256)}.${1 + randomInt(254)}`;

export interface PairedMachine {
  machineId: string;
  pairingId: string;
  pollSecret: string;
}

/** The whole pairing flow as an installer and its host would run it: create, approve, poll, enroll. */
export async function pairMachine(
  app: TypedApp,
  host: SeededAccount,
  options: { goLive?: boolean; manifest?: MachineManifest; auth?: 'session' | 'api-key' } = {},
): Promise<PairedMachine> {
  const manifest = options.manifest ?? sampleManifest();
  const remoteAddress = randomAddress();
  const created = await app.inject({ method: 'POST', url: '/api/v1/hosts/pairings', payload: { manifest }, remoteAddress });
  if (created.statusCode !== 201) throw new Error(`pairing create: ${created.statusCode} ${created.body}`);
  const pairing = created.json() as { pairing_id: string; poll_secret: string; user_code: string };
  const token = options.auth === 'api-key' ? host.apiKey : host.sessionToken;
  const approved = await app.inject({
    method: 'POST',
    url: '/api/v1/hosts/pairings/approve',
    remoteAddress,
    headers: { ...bearer(token), 'idempotency-key': randomUUID() },
    payload: { user_code: pairing.user_code, ...(options.goLive === undefined ? {} : { go_live: options.goLive }) },
  });
  if (approved.statusCode !== 200) throw new Error(`approve: ${approved.statusCode} ${approved.body}`);
  const polled = await app.inject({
    method: 'POST',
    url: '/api/v1/hosts/pairings/poll',
    remoteAddress,
    payload: { pairing_id: pairing.pairing_id, poll_secret: pairing.poll_secret },
  });
  const status = polled.json() as { status: string; enrollment_token?: string };
  if (status.status !== 'approved' || !status.enrollment_token) throw new Error(`poll: ${polled.statusCode} ${polled.body}`);
  const enrolled = await app.inject({
    method: 'POST',
    url: '/api/v1/agents/enroll',
    remoteAddress,
    payload: { enrollment_token: status.enrollment_token, public_key: machinePublicKey(), manifest },
  });
  if (enrolled.statusCode !== 201) throw new Error(`enroll: ${enrolled.statusCode} ${enrolled.body}`);
  return {
    machineId: (enrolled.json() as { machine_id: string }).machine_id,
    pairingId: pairing.pairing_id,
    pollSecret: pairing.poll_secret,
  };
}

/** A machine enrolled with a directly created enrollment token. */
export async function enrollDirect(
  app: TypedApp,
  host: SeededAccount,
  options: { goLive?: boolean; manifest?: MachineManifest; publicKey?: string } = {},
): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: `/api/v1/hosts/enrollment-tokens${options.goLive === false ? '?go_live=false' : ''}`,
    headers: { ...bearer(host.apiKey), 'idempotency-key': randomUUID() },
  });
  if (created.statusCode !== 201) throw new Error(`enrollment token: ${created.statusCode} ${created.body}`);
  const enrolled = await app.inject({
    method: 'POST',
    url: '/api/v1/agents/enroll',
    remoteAddress: randomAddress(),
    payload: {
      enrollment_token: created.json().enrollment_token,
      public_key: options.publicKey ?? machinePublicKey(),
      manifest: options.manifest ?? sampleManifest(),
    },
  });
  if (enrolled.statusCode !== 201) throw new Error(`enroll: ${enrolled.statusCode} ${enrolled.body}`);
  return enrolled.json().machine_id;
}

export function heartbeatMessage(healthy: boolean, problems: string[] = []): HeartbeatMessage {
  return { v: 1, t: 'heartbeat', sid: 's1', seq: 1, at: new Date().toISOString(), uptime_s: 100, healthy, problems, running_jobs: [] };
}

/** Applies a heartbeat at once, in its own transaction (never written behind), as the hosting service does for state changes. */
export async function sendHeartbeat(
  ctx: Pick<AppContext, 'store' | 'clock' | 'services'>,
  machineId: string,
  healthy = true,
  problems: string[] = [],
): Promise<void> {
  const heartbeat = heartbeatMessage(healthy, problems);
  await ctx.store.db.transaction().execute((trx) => ctx.services.hosting.applyHeartbeat(trx, machineId, heartbeat, ctx.clock.now()));
}

let nextId = 1;

export function telemetryMessage(samples: TelemetrySample[]): TelemetryMessage {
  return { v: 1, t: 'telemetry', sid: 's1', seq: 1, id: nextId++, samples };
}

export function nettestReceipt(fields: Partial<NettestReceiptMessage> & { measured_at: string }): NettestReceiptMessage {
  return { v: 1, t: 'nettest_receipt', sid: 's1', seq: 1, id: nextId++, command_id: randomUUID(), duration_ms: 12_000, ...fields };
}

/**
 * One host account and `count` enrolled machines written straight into the store (no pairing, no HTTP), for store
 * tests; machine `i` has go-live set when `goLive(i)` says so (all by default). Returns the machine ids in order.
 */
export async function insertHostMachines(
  db: Executor,
  count: number,
  options: { now: Date; goLive?: (index: number) => boolean },
): Promise<string[]> {
  const { now, goLive = () => true } = options;
  const account = await insertAccount(db, {
    email: `host-${randomUUID()}@example.test`,
    passwordHash: null,
    name: null,
    role: 'host',
    emailVerified: true,
    now,
  });
  const machines: string[] = [];
  for (let i = 0; i < count; i++) {
    const token = await storeEnrollmentToken(db, { accountId: account.id, pairingId: null, goLive: goLive(i), now });
    const machine = await insertMachine(db, {
      id: randomUUID(),
      ownerAccountId: account.id,
      publicKey: `key-${i}`,
      manifest: {
        hostname: `rig-${i}`,
        gpus: [],
        cpu: { model: 'cpu', cores: 1 },
        ram_bytes: '1',
        disk_bytes: '1',
        os: 'linux',
        agent_version: '0.1.0',
      },
      goLive: goLive(i),
      enrollmentTokenId: token.id,
      pairingId: null,
      now,
    });
    machines.push(machine.id);
  }
  return machines;
}
