import { randomBytes } from 'node:crypto';
import type { JobLimits, LaunchJobBody, TemplateKind, TemplateSpec } from '@ark/shared';
import { DomainError } from '../../errors.js';

// What an agent is told to run: validated renter input merged with the template's spec.

/** Key types an agent's SSH server (ssh2) accepts. */
export const SSH_KEY_TYPES = [
  'ssh-ed25519',
  'ssh-rsa',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
] as const;

const KEY_LINE = /^([a-z0-9@.-]+) ([A-Za-z0-9+/]+={0,2})(?: ([^\r\n]{0,1024}))?$/;

const invalid = (field: string, message: string): never => {
  throw new DomainError('VALIDATION_FAILED', `body/${field} ${message}`);
};

/**
 * Checks each key is one OpenSSH public key line (`type base64 [comment]`) of a supported type whose blob names the
 * same type. Returns the keys normalised (trimmed, duplicates removed).
 */
export function validateSshPublicKeys(keys: readonly string[]): string[] {
  const out: string[] = [];
  for (const [i, raw] of keys.entries()) {
    const key = raw.trim();
    const match = KEY_LINE.exec(key);
    if (!match) invalid(`ssh_public_keys/${i}`, 'must be one OpenSSH public key line: "<type> <base64> [comment]"');
    const [, type, body] = match as unknown as [string, string, string];
    if (!(SSH_KEY_TYPES as readonly string[]).includes(type)) invalid(`ssh_public_keys/${i}`, `has an unsupported key type "${type}"`);
    const blob = Buffer.from(body, 'base64');
    // The blob starts with the key type as an SSH string: uint32 length, then the name.
    const nameLength = blob.length >= 4 ? blob.readUInt32BE(0) : -1;
    if (nameLength !== type.length || blob.length < 4 + nameLength + 4 || blob.subarray(4, 4 + nameLength).toString('latin1') !== type) {
      invalid(`ssh_public_keys/${i}`, 'is not a valid key: its data does not match its type');
    }
    if (!out.includes(key)) out.push(key);
  }
  return out;
}

/** Renter variables: the schema checks names and sizes; the `ARK_` prefix is the platform's. */
export function validateRenterEnv(env: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env ?? {})) {
    if (name.toUpperCase().startsWith('ARK_')) invalid(`env/${name}`, 'uses the reserved prefix ARK_');
    if (value.includes('\u0000')) invalid(`env/${name}`, 'must not contain NUL characters');
    out[name] = value;
  }
  return out;
}

/** A per-job engine key: 32 random bytes, base64url, 43 characters of [A-Za-z0-9_-]. */
export function newEngineApiKey(): string {
  return randomBytes(32).toString('base64url');
}

export interface LaunchTemplate {
  kind: TemplateKind;
  spec: TemplateSpec;
}

export interface LaunchInput {
  jobId: string;
  fence: bigint;
  imageDigest: string;
  gpuPciAddresses: string[];
  sshPublicKeys: string[];
  renterEnv: Record<string, string>;
  template: LaunchTemplate | null;
  engineApiKey: string | null;
  meterIntervalS: number;
  /**
   * The machine manifest's `job_limits`: null for an agent older than confinement, which refuses launch_job fields
   * it does not know, so it is sent neither the limits nor the quotas.
   */
  jobLimits: JobLimits | null;
  /** The quote's included quotas; 0 states none (the seeded offer), and nothing is enforced. */
  includedDiskGib: number;
  includedEgressGib: number;
}

const GIB = 1024n ** 3n;

/** The launch_job command body. The renter's variables override the template's. */
export function buildLaunchBody(input: LaunchInput): LaunchJobBody {
  const spec = input.template?.spec;
  const body: LaunchJobBody = {
    job_id: input.jobId,
    fence: input.fence.toString(),
    image_digest: input.imageDigest,
    gpu_pci_addresses: input.gpuPciAddresses,
    env: { ...(spec?.environment ?? {}), ...input.renterEnv },
    ports: (spec?.ports ?? []).map((p) => ({ container_port: p.container_port, protocol: p.protocol })),
    ssh_public_keys: input.sshPublicKeys,
    meter_interval_s: input.meterIntervalS,
  };
  if (spec?.command) body.command = [...spec.command];
  if (spec?.health_check) body.health_check = { ...spec.health_check };
  if (input.engineApiKey !== null) body.engine_api_key = input.engineApiKey;
  if (input.jobLimits !== null) {
    body.limits = { ...input.jobLimits };
    if (input.includedDiskGib > 0) body.included_disk_bytes = (BigInt(input.includedDiskGib) * GIB).toString();
    if (input.includedEgressGib > 0) body.included_egress_bytes = (BigInt(input.includedEgressGib) * GIB).toString();
  }
  return body;
}

/** Values never shown in events: the engine key and the renter's variables. */
export function secretsOfLaunch(body: Pick<LaunchJobBody, 'engine_api_key'>, renterEnv: Readonly<Record<string, string>>): string[] {
  return [...(body.engine_api_key ? [body.engine_api_key] : []), ...Object.values(renterEnv)];
}
