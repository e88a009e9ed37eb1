import { type Static, Type } from '@sinclair/typebox';
import { ByteCount, Uuid } from '../formats.js';

/** What an agent reports about its machine at enrollment (and may refresh later). Self-reported: evidence, not authority. */
export const GpuManifest = Type.Object(
  {
    pci_address: Type.String({ minLength: 1, maxLength: 32 }),
    model: Type.String({ minLength: 1, maxLength: 200 }),
    vram_bytes: ByteCount,
    uuid: Type.Optional(Type.String({ maxLength: 100 })),
  },
  { additionalProperties: false },
);
export type GpuManifest = Static<typeof GpuManifest>;

/**
 * What one job's container may use on a machine: CPU (in billionths of a CPU, Docker's NanoCpus), memory (swap
 * included: the same figure) and processes. The agent works them out from the machine and the reserve its host
 * keeps for the agent, Docker and the host (host-agent/README.md "What a job may use"), reports them in its
 * manifest, and applies them to every job's container; the control plane shows them on the offer and sends them
 * back with each launch_job.
 */
export const JobLimits = Type.Object(
  {
    /** 1e9 is one CPU; at least a hundredth of one. */
    nano_cpus: Type.Integer({ minimum: 10_000_000, maximum: 4096 * 1_000_000_000 }),
    /** Memory and swap together; Docker refuses less than 6 MiB. */
    memory_bytes: ByteCount,
    /** Processes and threads the container may hold at once. */
    pids: Type.Integer({ minimum: 16, maximum: 4_194_304 }),
  },
  { additionalProperties: false },
);
export type JobLimits = Static<typeof JobLimits>;

export const MachineManifest = Type.Object(
  {
    hostname: Type.String({ maxLength: 255 }),
    gpus: Type.Array(GpuManifest, { maxItems: 64 }),
    cpu: Type.Object(
      { model: Type.String({ maxLength: 200 }), cores: Type.Integer({ minimum: 1, maximum: 4096 }) },
      { additionalProperties: false },
    ),
    ram_bytes: ByteCount,
    disk_bytes: ByteCount,
    os: Type.String({ maxLength: 200 }),
    driver_version: Type.Optional(Type.String({ maxLength: 64 })),
    cuda_version: Type.Optional(Type.String({ maxLength: 64 })),
    agent_version: Type.String({ maxLength: 64 }),
    region: Type.Optional(Type.String({ maxLength: 64 })),
    /**
     * What each job may use (absent from agents older than confinement). Its presence also says the agent takes
     * launch_job's `limits` and included quotas, which the control plane only sends to such an agent.
     */
    job_limits: Type.Optional(JobLimits),
  },
  { additionalProperties: false },
);
export type MachineManifest = Static<typeof MachineManifest>;

export const EnrollRequest = Type.Object(
  {
    enrollment_token: Type.String({ minLength: 1, maxLength: 200 }),
    /** The machine's ed25519 public key, base64 (32 bytes). */
    public_key: Type.String({ minLength: 44, maxLength: 44, pattern: '^[A-Za-z0-9+/]{43}=$' }),
    manifest: MachineManifest,
  },
  { additionalProperties: false },
);
export type EnrollRequest = Static<typeof EnrollRequest>;

export const EnrollResponse = Type.Object(
  {
    machine_id: Uuid,
    /** base64 ed25519 public key the agent pins and verifies every control-plane frame with. */
    control_plane_public_key: Type.String(),
    /** Absolute ws:// or wss:// URL including `?v=1`. */
    channel_url: Type.String(),
  },
  { additionalProperties: false },
);
export type EnrollResponse = Static<typeof EnrollResponse>;

/**
 * `00000000:3B:00.0` (nvidia-smi) to `0000:3b:00.0` (sysfs, Docker device requests). The domain keeps
 * four hex digits unless it needs more, as Linux prints it. Undefined if the text is no PCI address.
 */
export function normalisePciAddress(text: string): string | undefined {
  const match = /^(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$/i.exec(text.trim());
  if (match === null) return undefined;
  const [, domain = '0', bus = '', device = '', fn = ''] = match;
  const domainHex = Number.parseInt(domain, 16).toString(16).padStart(4, '0');
  return `${domainHex}:${bus.toLowerCase().padStart(2, '0')}:${device.toLowerCase().padStart(2, '0')}.${fn}`;
}
