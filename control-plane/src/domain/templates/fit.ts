import type { TemplateFit } from '@ark/shared';

/** What a fit needs from a template. */
export interface VramRequirement {
  id: string;
  minVramBytes: bigint;
  recommendedVramBytes: bigint | null;
}

/**
 * The template's vram_fit against a machine's measured device VRAM. Each assigned device must hold the
 * template, so the smallest device decides. Without any device only a template needing no VRAM fits.
 */
export function computeFit(template: VramRequirement, deviceVramBytes: readonly bigint[]): TemplateFit {
  // biome-ignore lint/complexity/useMathMinMax: Math.min does not take bigint.
  const smallest = deviceVramBytes.length === 0 ? null : deviceVramBytes.reduce((a, b) => (b < a ? b : a));
  const available = smallest ?? 0n;
  const fits = available >= template.minVramBytes;
  const fit: TemplateFit = {
    template_id: template.id,
    fits,
    min_vram_bytes: template.minVramBytes.toString(),
    device_vram_bytes: smallest === null ? null : smallest.toString(),
    device_count: deviceVramBytes.length,
    headroom_bytes: fits ? (available - template.minVramBytes).toString() : '0',
    shortfall_bytes: fits ? '0' : (template.minVramBytes - available).toString(),
  };
  if (template.recommendedVramBytes !== null) {
    fit.recommended_vram_bytes = template.recommendedVramBytes.toString();
    fit.meets_recommended = available >= template.recommendedVramBytes;
  }
  return fit;
}

/**
 * A machine's devices as the store keeps them (a GPU count and the smallest per-GPU VRAM): for a fit only the
 * smallest device matters, so that many devices of the smallest size give the same answer as the real list.
 */
export function machineDeviceVram(machine: { gpuCount: number | bigint; vramBytes: bigint | null }): bigint[] {
  const count = Number(machine.gpuCount);
  if (machine.vramBytes === null || count <= 0) return [];
  return Array.from({ length: count }, () => machine.vramBytes as bigint);
}
