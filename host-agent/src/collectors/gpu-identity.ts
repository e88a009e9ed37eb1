// GPU identity for hardware receipts (issue 24 item 2): what a receipt names each GPU by, read from the same
// `nvidia-smi -q -x` document the telemetry collector parses (nvidia-smi-xml.ts), so one parser serves both and is
// tested on the same recorded real output. Pure: no I/O.
import type { ReceiptGpu } from '@ark/shared';
import { cleanText, gpuNodes, logRoot, normalisePciAddress, parseBytes, readNvidiaSmiLog, readVersions, textAt } from './nvidia-smi-xml.js';

/** The machine's GPUs as a receipt states them, with the driver and CUDA versions. */
export type GpuIdentity = {
  driver_version?: string;
  cuda_version?: string;
  gpus: ReceiptGpu[];
};

/** What reads the machine's GPU identity: no GPU or no nvidia-smi answers `{gpus: []}`, never an error. */
export interface GpuIdentitySource {
  identity(): Promise<GpuIdentity>;
}

/** Text fields the receipt schema bounds; nvidia-smi's are far shorter, a corrupt document is cut to fit. */
const LIMITS = { uuid: 100, name: 200, pci: 32, vbios: 64 } as const;

/** Parses `nvidia-smi -q -x` text into the receipt's identity. Throws on malformed XML. */
export function parseGpuIdentityXml(xml: string): GpuIdentity {
  return gpuIdentityFromNvidiaSmiLog(readNvidiaSmiLog(xml));
}

/**
 * A parsed log (readNvidiaSmiLog's value) to identity: each `<gpu>` in listing order (the PCI order nvidia-smi
 * indexes by), its UUID, product name, bus id as nvidia-smi prints it, PCI device and subsystem ids (`0x` and upper
 * case, whichever way the driver printed them), VBIOS, and the framebuffer's total in bytes. A field nvidia-smi
 * could not read (`N/A`) is the empty string, and VRAM 0: the receipt says what was seen, a verifier judges it.
 */
export function gpuIdentityFromNvidiaSmiLog(parsed: unknown): GpuIdentity {
  const log = logRoot(parsed);
  const identity: GpuIdentity = { ...readVersions(log), gpus: [] };
  gpuNodes(log).forEach((gpu, index) => {
    identity.gpus.push({
      index,
      uuid: field(textAt(gpu, 'uuid'), LIMITS.uuid),
      name: field(textAt(gpu, 'product_name'), LIMITS.name),
      pci_address: field(busIdOf(gpu), LIMITS.pci),
      pci_device_id: hexId(textAt(gpu, 'pci', 'pci_device_id')),
      pci_subsystem_id: hexId(textAt(gpu, 'pci', 'pci_sub_system_id')),
      vbios_version: field(textAt(gpu, 'vbios_version'), LIMITS.vbios),
      vram_bytes: parseBytes(textAt(gpu, 'fb_memory_usage', 'total')) ?? 0,
    });
  });
  return identity;
}

/**
 * Whether the GPUs a launch was assigned (by PCI address) are all here, as this identity reading sees them. Answers
 * the problem in words, or undefined when every address is present (compared normalised: `00000000:3B:00.0` and
 * `0000:3b:00.0` are one device).
 */
export function missingAssignedGpus(identity: GpuIdentity, assigned: readonly string[]): string | undefined {
  const present = new Set(identity.gpus.map((gpu) => normalisePciAddress(gpu.pci_address)).filter((a) => a !== undefined));
  const missing = assigned.filter((address) => {
    const normal = normalisePciAddress(address);
    return normal === undefined || !present.has(normal);
  });
  if (missing.length === 0) return undefined;
  const seen = identity.gpus.length === 0 ? 'none' : identity.gpus.map((gpu) => `${gpu.pci_address} (${gpu.name || 'unnamed'})`).join(', ');
  return `GPU identity check failed: assigned GPU ${missing.map((a) => a.slice(0, 32)).join(', ')} not found by nvidia-smi (it lists ${seen})`.slice(
    0,
    500,
  );
}

function busIdOf(gpu: Record<string, unknown>): string | undefined {
  const busId = cleanText(textAt(gpu, 'pci', 'pci_bus_id'));
  if (busId !== undefined) return busId;
  const attributes = gpu.$;
  return typeof attributes === 'object' && attributes !== null && typeof (attributes as { id?: unknown }).id === 'string'
    ? (attributes as { id: string }).id
    : undefined;
}

function field(text: string | undefined, max: number): string {
  return (cleanText(text) ?? '').slice(0, max);
}

/** `233510DE` or `0x233510DE` to `0x233510DE`; anything not hex stays as printed (bounded). */
function hexId(text: string | undefined): string {
  const clean = cleanText(text);
  if (clean === undefined) return '';
  const match = /^(?:0x)?([0-9a-f]{1,16})$/i.exec(clean);
  return match?.[1] === undefined ? clean.slice(0, LIMITS.pci) : `0x${match[1].toUpperCase()}`;
}
