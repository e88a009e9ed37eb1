import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildLaunchBody, newEngineApiKey, secretsOfLaunch, validateRenterEnv, validateSshPublicKeys } from './launch.js';

/** An OpenSSH public key line for a fresh ed25519 key, as `ssh-keygen` writes it. */
function openSshEd25519(comment = 'renter@laptop'): string {
  const raw = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const string = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  return `ssh-ed25519 ${Buffer.concat([string(Buffer.from('ssh-ed25519')), string(raw)]).toString('base64')} ${comment}`;
}

describe('validateSshPublicKeys', () => {
  it('accepts OpenSSH key lines, trims and deduplicates them', () => {
    const key = openSshEd25519();
    expect(validateSshPublicKeys([` ${key} `, key])).toEqual([key]);
  });

  it('refuses anything else, naming the item', () => {
    expect(() => validateSshPublicKeys(['not a key'])).toThrow(/ssh_public_keys\/0/);
    expect(() => validateSshPublicKeys([openSshEd25519(), 'ssh-dss AAAAB3NzaC1kc3MAAACBAP'])).toThrow(/ssh_public_keys\/1.*unsupported/);
    // The blob says ssh-ed25519; the line claims ssh-rsa.
    const lying = openSshEd25519().replace(/^ssh-ed25519/, 'ssh-rsa');
    expect(() => validateSshPublicKeys([lying])).toThrow(/does not match its type/);
    expect(() => validateSshPublicKeys([`${openSshEd25519()}\nssh-ed25519 AAAA`])).toThrow(/one OpenSSH public key line/);
  });
});

describe('validateRenterEnv', () => {
  it('keeps renter variables and refuses the reserved ARK_ prefix', () => {
    expect(validateRenterEnv({ HF_TOKEN: 'abc', _X: '' })).toEqual({ HF_TOKEN: 'abc', _X: '' });
    expect(() => validateRenterEnv({ ARK_ENGINE_API_KEY: 'x' })).toThrow(/reserved prefix/);
    expect(validateRenterEnv(undefined)).toEqual({});
  });
});

describe('buildLaunchBody', () => {
  it("merges the template's spec with the renter's variables (the renter's win)", () => {
    const key = newEngineApiKey();
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const body = buildLaunchBody({
      jobId: '00000000-0000-4000-8000-000000000001',
      fence: 3n,
      imageDigest: 'registry.test/ark/llm@sha256:' + 'a'.repeat(64),
      gpuPciAddresses: ['0000:01:00.0'],
      sshPublicKeys: ['ssh-ed25519 AAAA'],
      renterEnv: { MODE: 'renter', TOKEN: 'hunter22' },
      template: {
        kind: 'model',
        spec: {
          ports: [{ container_port: 8000, protocol: 'http', name: 'api' }],
          environment: { MODE: 'template', THREADS: '4' },
          command: ['serve'],
          health_check: { port: 8000, path: '/health' },
          engine: { name: 'vllm', model: 'm', api_port: 8000 },
        },
      },
      engineApiKey: key,
      meterIntervalS: 30,
      jobLimits: null,
      includedDiskGib: 50,
      includedEgressGib: 10,
    });
    expect(body).toEqual({
      job_id: '00000000-0000-4000-8000-000000000001',
      fence: '3',
      image_digest: 'registry.test/ark/llm@sha256:' + 'a'.repeat(64),
      gpu_pci_addresses: ['0000:01:00.0'],
      env: { MODE: 'renter', THREADS: '4', TOKEN: 'hunter22' },
      ports: [{ container_port: 8000, protocol: 'http' }],
      ssh_public_keys: ['ssh-ed25519 AAAA'],
      meter_interval_s: 30,
      command: ['serve'],
      health_check: { port: 8000, path: '/health' },
      engine_api_key: key,
    });
    expect(secretsOfLaunch(body, { TOKEN: 'hunter22' })).toEqual([key, 'hunter22']);
  });

  const base = {
    jobId: '00000000-0000-4000-8000-000000000002',
    fence: 1n,
    imageDigest: 'registry.test/ark/busybox@sha256:' + 'b'.repeat(64),
    gpuPciAddresses: [],
    sshPublicKeys: ['ssh-ed25519 AAAA'],
    renterEnv: {},
    template: null,
    engineApiKey: null,
    meterIntervalS: 30,
  };
  const limits = { nano_cpus: 3_000_000_000, memory_bytes: String(14 * 1024 ** 3), pids: 4096 };

  it("sends the manifest's limits and the quote's included quotas, in bytes, to an agent that announced limits", () => {
    const body = buildLaunchBody({ ...base, jobLimits: limits, includedDiskGib: 50, includedEgressGib: 10 });
    expect(body.limits).toEqual(limits);
    expect(body.included_disk_bytes).toBe(String(50 * 1024 ** 3));
    expect(body.included_egress_bytes).toBe(String(10 * 1024 ** 3));
  });

  it('states no quota for an included 0 (the seeded offer) and nothing new to an agent older than confinement', () => {
    const none = buildLaunchBody({ ...base, jobLimits: limits, includedDiskGib: 0, includedEgressGib: 0 });
    expect(none.limits).toEqual(limits);
    expect('included_disk_bytes' in none || 'included_egress_bytes' in none).toBe(false);
    // Such an agent refuses launch_job fields it does not know (additionalProperties: false), so none are sent.
    const old = buildLaunchBody({ ...base, jobLimits: null, includedDiskGib: 50, includedEgressGib: 10 });
    expect(Object.keys(old).filter((key) => ['limits', 'included_disk_bytes', 'included_egress_bytes'].includes(key))).toEqual([]);
  });
});
