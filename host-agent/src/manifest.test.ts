import { MachineManifest } from '@ark/shared/channel/manifest';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { describeMachine, readMachineFacts } from './manifest.js';

const facts = {
  hostname: 'rig-1',
  cpuModel: 'AMD EPYC 7543',
  cpuCores: 64,
  ramBytes: 512n * 1024n ** 3n,
  diskBytes: 4n * 1024n ** 4n,
  os: 'Ubuntu 24.04',
};

describe('describeMachine', () => {
  it('builds a schema-valid manifest from the facts and the GPU inventory', () => {
    const manifest = describeMachine({
      facts,
      inventory: {
        driver_version: '555.42.06',
        cuda_version: '12.5',
        gpus: [
          { pci_address: '0000:01:00.0', model: 'NVIDIA L4', vram_bytes: 24n * 1024n ** 3n, uuid: 'GPU-1' },
          { pci_address: '0000:02:00.0', model: 'NVIDIA GB10' },
        ],
      },
      agentVersion: '0.1.0',
      region: 'eu-west',
      jobLimits: { nano_cpus: 63_000_000_000, memory_bytes: String(510 * 1024 ** 3), pids: 4096 },
    });
    expect(manifest).toEqual({
      hostname: 'rig-1',
      gpus: [
        { pci_address: '0000:01:00.0', model: 'NVIDIA L4', vram_bytes: String(24 * 1024 ** 3), uuid: 'GPU-1' },
        // Unified memory: no dedicated framebuffer.
        { pci_address: '0000:02:00.0', model: 'NVIDIA GB10', vram_bytes: '0' },
      ],
      cpu: { model: 'AMD EPYC 7543', cores: 64 },
      ram_bytes: String(512 * 1024 ** 3),
      disk_bytes: String(4 * 1024 ** 4),
      os: 'Ubuntu 24.04',
      driver_version: '555.42.06',
      cuda_version: '12.5',
      agent_version: '0.1.0',
      region: 'eu-west',
      job_limits: { nano_cpus: 63_000_000_000, memory_bytes: String(510 * 1024 ** 3), pids: 4096 },
    });
    expect([...Value.Errors(MachineManifest, manifest)]).toEqual([]);
  });

  it('leaves out what is unknown and never sends an empty required string', () => {
    const manifest = describeMachine({
      facts: { ...facts, hostname: '', cpuModel: '', cpuCores: 0, os: '' },
      inventory: { gpus: [] },
      agentVersion: '0.1.0',
      region: null,
    });
    expect(manifest).toMatchObject({ hostname: 'unknown', cpu: { model: 'unknown CPU', cores: 1 }, os: 'unknown', gpus: [] });
    expect(manifest).not.toHaveProperty('region');
    expect(manifest).not.toHaveProperty('driver_version');
    expect([...Value.Errors(MachineManifest, manifest)]).toEqual([]);
  });
});

describe('readMachineFacts', () => {
  it('reads this machine', async () => {
    const read = await readMachineFacts('/');
    expect(read.hostname).not.toBe('');
    expect(read.cpuCores).toBeGreaterThanOrEqual(1);
    expect(read.ramBytes).toBeGreaterThan(0n);
    expect(read.diskBytes).toBeGreaterThan(0n);
  });
});
