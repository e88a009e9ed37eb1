import { createRequire } from 'node:module';
import { normalisePciAddress } from '@ark/shared/channel/manifest';
import type { GpuDescription, GpuInventory, GpuSample } from './types.js';

// The PCI address form is shared with the control plane, which compares the job's GPUs against telemetry.
export { normalisePciAddress };

// Pure mapping from `nvidia-smi -q -x` output to samples and inventory. No I/O here, so the same
// code is exercised on recorded fixtures in tests and on live output in the collector.

/** A machine with more GPUs than this is not one we can rent out; the cap bounds every sample. */
export const MAX_GPUS_PER_SAMPLE = 64;
/** Names and ids longer than this are cut, so a corrupt document cannot bloat telemetry frames. */
export const MAX_TEXT_CHARS = 200;

const MIB_BYTES = 1024 * 1024;
const BYTES_PER_UNIT: Record<string, number> = {
  B: 1,
  KiB: 1024,
  MiB: MIB_BYTES,
  GiB: 1024 * MIB_BYTES,
  TiB: 1024 * 1024 * MIB_BYTES,
};

export type NvidiaSmiReport = {
  driver_version?: string;
  cuda_version?: string;
  gpus: GpuSample[];
};

type ParseString = (xml: string, options: Record<string, unknown>, callback: (error: Error | null, result: unknown) => void) => void;

// node-nvidia-smi turns the XML into objects with xml2js; we load that same parser through the
// library's own dependency edge (resolvable under any package manager's layout) so our parsed shape
// is exactly what node-nvidia-smi hands out, without a second XML dependency in the agent. Loaded on the first
// document: a machine without nvidia-smi (or an agent that never samples) never pays for the parser.
let xml2js: { parseString: ParseString } | undefined;
function parser(): { parseString: ParseString } {
  xml2js ??= createRequire(createRequire(import.meta.url).resolve('node-nvidia-smi'))('xml2js') as { parseString: ParseString };
  return xml2js;
}
// The options node-nvidia-smi itself uses.
const XML2JS_OPTIONS = { explicitArray: false, trim: true };

/** XML text to the object node-nvidia-smi would produce (`{nvidia_smi_log: {...}}`). Throws on malformed XML. */
export function readNvidiaSmiLog(xml: string): unknown {
  let outcome: { error: Error | null; result: unknown } | undefined;
  // xml2js calls back synchronously unless its `async` option is set, which we never set.
  parser().parseString(xml, XML2JS_OPTIONS, (error, result) => {
    outcome = { error, result };
  });
  if (outcome === undefined) throw new Error('xml2js did not finish synchronously');
  if (outcome.error) throw outcome.error;
  return outcome.result;
}

/** Parse `nvidia-smi -q -x` output into per-GPU samples. Throws on malformed XML. */
export function parseNvidiaSmiXml(xml: string): NvidiaSmiReport {
  return samplesFromNvidiaSmiLog(readNvidiaSmiLog(xml));
}

/** Map a parsed log (ours, or node-nvidia-smi's callback value) to samples. */
export function samplesFromNvidiaSmiLog(parsed: unknown): NvidiaSmiReport {
  const log = logRoot(parsed);
  const report: NvidiaSmiReport = { gpus: [] };
  const versions = readVersions(log);
  if (versions.driver_version !== undefined) report.driver_version = versions.driver_version;
  if (versions.cuda_version !== undefined) report.cuda_version = versions.cuda_version;
  for (const gpu of gpuNodes(log)) {
    const sample = sampleGpu(gpu);
    if (sample !== undefined) report.gpus.push(sample);
  }
  return report;
}

/** Inventory for the enrollment manifest: model, VRAM and PCI address of each GPU, plus versions. */
export function describeGpus(parsed: unknown): GpuInventory {
  const report = samplesFromNvidiaSmiLog(parsed);
  const inventory: GpuInventory = { gpus: report.gpus.map(describeSample) };
  if (report.driver_version !== undefined) inventory.driver_version = report.driver_version;
  if (report.cuda_version !== undefined) inventory.cuda_version = report.cuda_version;
  return inventory;
}

export function describeSample(sample: GpuSample): GpuDescription {
  const description: GpuDescription = { pci_address: sample.pci_address, model: sample.model ?? 'unknown' };
  if (sample.vram_bytes !== undefined) description.vram_bytes = sample.vram_bytes;
  if (sample.uuid !== undefined) description.uuid = sample.uuid;
  return description;
}

/**
 * "45 C", "250.50 W", "30 %" to a number when the unit is the expected one. Everything else
 * ("N/A", "[N/A]", "[Not Supported]", "Requested functionality has been deprecated", a wrong unit)
 * is undefined: a value we cannot read is not measured.
 */
export function parseQuantity(text: string | undefined, unit: string): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(-?\d+(?:\.\d+)?)\s*(\S+)$/.exec(text.trim());
  if (match === null || match[2] !== unit) return undefined;
  const value = Number(match[1]);
  return Number.isFinite(value) ? value : undefined;
}

/** "1024 MiB" to bytes; accepts B, KiB, MiB, GiB, TiB. */
export function parseBytes(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(\d+(?:\.\d+)?)\s*(\S+)$/.exec(text.trim());
  if (match === null) return undefined;
  const multiplier = BYTES_PER_UNIT[match[2] ?? ''];
  if (multiplier === undefined) return undefined;
  const bytes = Math.round(Number(match[1]) * multiplier);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

function sampleGpu(gpu: Record<string, unknown>): GpuSample | undefined {
  const pciAddress = pciAddressOf(gpu);
  // Without an address the sample cannot be keyed to a device; real output always carries one.
  if (pciAddress === undefined) return undefined;
  const sample: GpuSample = { pci_address: pciAddress };

  const model = cleanText(textAt(gpu, 'product_name'));
  if (model !== undefined) sample.model = model;
  const uuid = cleanText(textAt(gpu, 'uuid'));
  if (uuid !== undefined) sample.uuid = uuid;

  const vramBytes = parseBytes(textAt(gpu, 'fb_memory_usage', 'total'));
  if (vramBytes !== undefined) sample.vram_bytes = BigInt(vramBytes);

  setIfMeasured(sample, 'temperature_c', parseQuantity(textAt(gpu, 'temperature', 'gpu_temp'), 'C'));
  setIfMeasured(sample, 'utilization_pct', parseQuantity(textAt(gpu, 'utilization', 'gpu_util'), '%'));
  setIfMeasured(sample, 'power_watts', powerWatts(gpu));
  setIfMeasured(sample, 'fan_pct', parseQuantity(textAt(gpu, 'fan_speed'), '%'));

  const memoryUsedBytes = parseBytes(textAt(gpu, 'fb_memory_usage', 'used'));
  setIfMeasured(sample, 'memory_used_bytes', memoryUsedBytes);
  if (memoryUsedBytes === undefined && vramBytes === undefined) {
    // Unified-memory parts (GB10) print every framebuffer figure as N/A; the memory their
    // processes hold in the shared pool is the only GPU memory figure nvidia-smi still reports.
    setIfMeasured(sample, 'unified_memory_used_bytes', processMemoryBytes(gpu));
  }
  return sample;
}

// Field names changed across drivers: `power_readings/power_draw` before 530,
// `gpu_power_readings/power_draw` from 530, `instant_power_draw` (with `power_draw` N/A) from 570.
// Module readings are left out on purpose: on Grace parts they include the CPU.
const POWER_PATHS: ReadonlyArray<readonly [string, string]> = [
  ['gpu_power_readings', 'instant_power_draw'],
  ['gpu_power_readings', 'power_draw'],
  ['gpu_power_readings', 'average_power_draw'],
  ['power_readings', 'instant_power_draw'],
  ['power_readings', 'power_draw'],
  ['power_readings', 'average_power_draw'],
];

function powerWatts(gpu: Record<string, unknown>): number | undefined {
  for (const [section, field] of POWER_PATHS) {
    const watts = parseQuantity(textAt(gpu, section, field), 'W');
    if (watts !== undefined) return watts;
  }
  return undefined;
}

/** Sum of per-process GPU memory, each pid counted once (a pid can be listed as both C and G). */
function processMemoryBytes(gpu: Record<string, unknown>): number | undefined {
  const processes = childAt(gpu, 'processes');
  if (!isRecord(processes)) return undefined;
  const byPid = new Map<string, number>();
  for (const process of asList(processes.process_info)) {
    if (!isRecord(process)) continue;
    const bytes = parseBytes(textAt(process, 'used_memory'));
    if (bytes === undefined) continue;
    const pid = textAt(process, 'pid') ?? `#${byPid.size}`;
    byPid.set(pid, Math.max(bytes, byPid.get(pid) ?? 0));
  }
  if (byPid.size === 0) return undefined;
  let total = 0;
  for (const bytes of byPid.values()) total += bytes;
  return total;
}

function pciAddressOf(gpu: Record<string, unknown>): string | undefined {
  const attributes = gpu.$;
  const id = isRecord(attributes) && typeof attributes.id === 'string' ? attributes.id : undefined;
  const fromId = id === undefined ? undefined : normalisePciAddress(id);
  if (fromId !== undefined) return fromId;
  const busId = textAt(gpu, 'pci', 'pci_bus_id');
  const fromBusId = busId === undefined ? undefined : normalisePciAddress(busId);
  if (fromBusId !== undefined) return fromBusId;
  const domain = textAt(gpu, 'pci', 'pci_domain');
  const bus = textAt(gpu, 'pci', 'pci_bus');
  const device = textAt(gpu, 'pci', 'pci_device');
  if (domain === undefined || bus === undefined || device === undefined) return undefined;
  return normalisePciAddress(`${domain}:${bus}:${device}.0`);
}

export function readVersions(log: Record<string, unknown>): { driver_version?: string; cuda_version?: string } {
  const versions: { driver_version?: string; cuda_version?: string } = {};
  const driver = cleanText(textAt(log, 'driver_version'));
  if (driver !== undefined) versions.driver_version = driver;
  const cuda = cleanText(textAt(log, 'cuda_version'));
  if (cuda !== undefined) versions.cuda_version = cuda;
  return versions;
}

/** Every `<gpu>` element is a GPU: brand, subsystem vendor and product name play no part. */
export function gpuNodes(log: Record<string, unknown>): Record<string, unknown>[] {
  return asList(log.gpu).filter(isRecord).slice(0, MAX_GPUS_PER_SAMPLE);
}

export function logRoot(parsed: unknown): Record<string, unknown> {
  if (!isRecord(parsed)) return {};
  const inner = parsed.nvidia_smi_log;
  if (inner === undefined) return parsed;
  return isRecord(inner) ? inner : {};
}

function setIfMeasured<K extends keyof GpuSample>(sample: GpuSample, key: K, value: GpuSample[K] | undefined): void {
  if (value !== undefined) sample[key] = value;
}

/** Text of the element at a path; xml2js gives a string, or `{_: text, $: attributes}` when attributes are present. */
export function textAt(node: Record<string, unknown>, ...path: string[]): string | undefined {
  const value = childAt(node, ...path);
  if (typeof value === 'string') return value;
  if (isRecord(value) && typeof value._ === 'string') return value._;
  return undefined;
}

function childAt(node: Record<string, unknown>, ...path: string[]): unknown {
  let current: unknown = node;
  for (const key of path) {
    // A repeated element becomes an array under explicitArray: false; the first one answers.
    const first = Array.isArray(current) ? current[0] : current;
    if (!isRecord(first)) return undefined;
    current = Object.hasOwn(first, key) ? first[key] : undefined;
  }
  return Array.isArray(current) ? current[0] : current;
}

// What nvidia-smi prints in place of a value it cannot give, bracketed or not.
const PLACEHOLDER_TEXT = /^\[?(N\/A|Not Supported|Unknown Error|Insufficient Permissions|Requested functionality has been deprecated)\]?$/i;

export function cleanText(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (trimmed === '' || PLACEHOLDER_TEXT.test(trimmed)) return undefined;
  return trimmed.slice(0, MAX_TEXT_CHARS);
}

function asList(value: unknown): unknown[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
