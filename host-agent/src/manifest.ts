import { statfs } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { JobLimits, MachineManifest } from '@ark/shared';
import { cpu as readCpu } from 'systeminformation/lib/cpu.js';
import { mem } from 'systeminformation/lib/memory.js';
import { osInfo } from 'systeminformation/lib/osinfo.js';
import type { GpuInventory } from './collectors/index.js';

/** The machine facts a manifest needs besides its GPUs. */
export interface MachineFacts {
  hostname: string;
  cpuModel: string;
  cpuCores: number;
  ramBytes: bigint;
  diskBytes: bigint;
  os: string;
}

const clip = (value: string, max: number) => (value.length > max ? value.slice(0, max) : value);

/** Pure: the enrollment manifest from the machine's facts and its GPU inventory. */
export function describeMachine(input: {
  facts: MachineFacts;
  inventory: GpuInventory;
  agentVersion: string;
  region: string | null;
  /** What each job may use here (jobs/job-limits.ts jobLimitsFor); the offer shows it. */
  jobLimits?: JobLimits;
}): MachineManifest {
  const { facts, inventory } = input;
  const manifest: MachineManifest = {
    hostname: clip(facts.hostname || 'unknown', 255),
    gpus: inventory.gpus.slice(0, 64).map((gpu) => ({
      pci_address: clip(gpu.pci_address, 32),
      model: clip(gpu.model || 'unknown GPU', 200),
      // Unified-memory devices have no framebuffer of their own: 0 says "none dedicated", not "unknown".
      vram_bytes: (gpu.vram_bytes ?? 0n).toString(),
      ...(gpu.uuid === undefined ? {} : { uuid: clip(gpu.uuid, 100) }),
    })),
    cpu: { model: clip(facts.cpuModel || 'unknown CPU', 200), cores: Math.min(4096, Math.max(1, Math.floor(facts.cpuCores))) },
    ram_bytes: facts.ramBytes.toString(),
    disk_bytes: facts.diskBytes.toString(),
    os: clip(facts.os || 'unknown', 200),
    agent_version: clip(input.agentVersion, 64),
  };
  if (inventory.driver_version !== undefined) manifest.driver_version = clip(inventory.driver_version, 64);
  if (inventory.cuda_version !== undefined) manifest.cuda_version = clip(inventory.cuda_version, 64);
  if (input.region !== null) manifest.region = clip(input.region, 64);
  if (input.jobLimits !== undefined) manifest.job_limits = { ...input.jobLimits };
  return manifest;
}

/** Reads the facts with systeminformation; disk is the file system holding `diskPath` (the state directory). */
export async function readMachineFacts(diskPath: string): Promise<MachineFacts> {
  const [cpu, memory, os, disk] = await Promise.all([
    readCpu().catch(() => undefined),
    mem().catch(() => undefined),
    osInfo().catch(() => undefined),
    statfs(diskPath).catch(() => undefined),
  ]);
  const cpuModel = [cpu?.manufacturer, cpu?.brand].filter((part) => part !== undefined && part !== '').join(' ');
  const osName = os === undefined ? '' : [os.distro, os.release, `(${os.platform} ${os.kernel} ${os.arch})`].filter(Boolean).join(' ');
  return {
    hostname: os?.hostname || hostname(),
    cpuModel,
    cpuCores: cpu?.cores ?? 1,
    ramBytes: BigInt(Math.max(0, Math.floor(memory?.total ?? 0))),
    diskBytes: disk === undefined ? 0n : BigInt(disk.blocks) * BigInt(disk.bsize),
    os: osName,
  };
}
