import { createHash } from 'node:crypto';
import type { MachineManifest } from '@ark/shared';
import { canonicalJson } from '@ark/shared/canonical-json';

// Facts the marketplace filters on, derived once from the agent's manifest at enrollment.

export interface ManifestFacts {
  hostname: string;
  gpuCount: number;
  /** The model most GPUs share (ties: the first seen); null without GPUs. */
  gpuModel: string | null;
  /** The smallest VRAM among the GPUs, so "at least N bytes" holds for every device; null without GPUs. */
  vramBytes: bigint | null;
  ramBytes: bigint;
  diskBytes: bigint;
  region: string | null;
}

export function manifestFacts(manifest: MachineManifest): ManifestFacts {
  const counts = new Map<string, number>();
  for (const gpu of manifest.gpus) counts.set(gpu.model, (counts.get(gpu.model) ?? 0) + 1);
  let gpuModel: string | null = null;
  let best = 0;
  for (const [model, count] of counts) {
    if (count > best) {
      gpuModel = model;
      best = count;
    }
  }
  let vramBytes: bigint | null = null;
  for (const gpu of manifest.gpus) {
    const vram = BigInt(gpu.vram_bytes);
    if (vramBytes === null || vram < vramBytes) vramBytes = vram;
  }
  return {
    hostname: manifest.hostname,
    gpuCount: manifest.gpus.length,
    gpuModel,
    vramBytes,
    ramBytes: BigInt(manifest.ram_bytes),
    diskBytes: BigInt(manifest.disk_bytes),
    region: manifest.region ?? null,
  };
}

/** sha256 of the manifest's canonical JSON (sorted keys): the same manifest always hashes the same. */
export function manifestHash(manifest: MachineManifest): string {
  return `sha256:${createHash('sha256').update(canonicalJson(manifest)).digest('hex')}`;
}

/** Measured VRAM of the given GPUs, in manifest order (none when the job takes no GPU: a machine rented whole). */
export function deviceVramOf(manifest: MachineManifest, pciAddresses: readonly string[]): bigint[] {
  return manifest.gpus.filter((g) => pciAddresses.includes(g.pci_address)).map((g) => BigInt(g.vram_bytes));
}
