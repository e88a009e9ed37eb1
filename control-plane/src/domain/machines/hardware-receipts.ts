import type { HardwareReceiptBody, MachineManifest } from '@ark/shared';

// What a verified hardware receipt says about the hardware a machine declared at enrollment (its manifest). Pure:
// the manifest and the receipt's body in, the contradictions out. A machine whose latest receipt contradicts its
// manifest is unlisted; one whose next receipt no longer does is listed again (services/hosting/hardware-receipts.ts).

/** How far a GPU's measured VRAM may fall under the declared figure (drivers reserve a little; 3 % is generous). */
export const VRAM_TOLERANCE_BPS = 300;

/**
 * The lowest score (hardwareReceiptScore: the geometric mean of GFLOP/s and GB/s on the benchmark's fixed model)
 * a healthy GPU of each family reaches, checked on the CUDA backend only. These are floors for "far under its
 * class", set well below (about a third of) what such a card is expected to reach on that model, so a busy or
 * throttled card still passes and only a different or failing card does not. Longest names first: `L40S` before `L4`.
 * CPU-only machines have no floor: their score is shown, never judged.
 */
export const GPU_CLASS_MIN_SCORES: ReadonlyArray<{ family: string; minScore: number }> = [
  { family: 'H200', minScore: 2500 },
  { family: 'H100', minScore: 2000 },
  { family: 'A100', minScore: 1200 },
  { family: 'L40S', minScore: 1000 },
  { family: 'RTX 4090', minScore: 900 },
  { family: 'RTX 3090', minScore: 600 },
  { family: 'A10G', minScore: 400 },
  { family: 'A10', minScore: 400 },
  { family: 'L4', minScore: 250 },
  { family: 'T4', minScore: 150 },
];

export type ContradictionCode = 'selftest_failed' | 'fewer_gpus' | 'other_model' | 'vram_short' | 'score_below_class';

export interface Contradiction {
  code: ContradictionCode;
  /** One sentence for the host (the ticket, the webhook, the machine view). */
  message: string;
}

/** The class floor for a declared GPU model, or null when the table knows no family of that name. */
export function classMinScoreOf(model: string): { family: string; minScore: number } | null {
  const upper = model.toUpperCase();
  const families = [...GPU_CLASS_MIN_SCORES].sort((a, b) => b.family.length - a.family.length);
  for (const entry of families) {
    // A family matches as a whole word: "L4" is not the start of "L40S".
    const pattern = new RegExp(`(^|[^A-Z0-9])${entry.family.replace(/ /g, '\\s+')}($|[^A-Z0-9])`);
    if (pattern.test(upper)) return entry;
  }
  return null;
}

const normalPci = (address: string): string => address.trim().toLowerCase();
const normalName = (name: string): string => name.trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * The ways the receipt contradicts the manifest, in a fixed order; empty when it agrees. A failed self-test is a
 * contradiction of its own (the machine could not show its hardware). Extra GPUs beyond the manifest are not.
 */
export function receiptContradictions(manifest: MachineManifest, body: HardwareReceiptBody, score: number | null): Contradiction[] {
  const found: Contradiction[] = [];
  if (!body.ok) {
    found.push({ code: 'selftest_failed', message: `The self-test failed: ${body.error ?? 'no reason given'}.` });
  }
  const declared = manifest.gpus;
  if (body.gpus.length < declared.length) {
    found.push({
      code: 'fewer_gpus',
      message: `The machine declares ${declared.length} GPU(s) but the self-test found ${body.gpus.length}.`,
    });
  }
  // Each declared GPU against the measured one at its PCI address, or at its position when addresses differ.
  const byAddress = new Map(body.gpus.map((gpu) => [normalPci(gpu.pci_address), gpu]));
  const otherModels: string[] = [];
  const short: string[] = [];
  declared.forEach((gpu, position) => {
    const measured = byAddress.get(normalPci(gpu.pci_address)) ?? body.gpus[position];
    if (measured === undefined) return;
    if (normalName(measured.name) !== normalName(gpu.model)) otherModels.push(`${gpu.model} declared, ${measured.name} found`);
    const declaredVram = BigInt(gpu.vram_bytes);
    const floor = (declaredVram * BigInt(10_000 - VRAM_TOLERANCE_BPS)) / 10_000n;
    if (BigInt(measured.vram_bytes) < floor) short.push(`${gpu.pci_address}: ${measured.vram_bytes} bytes of ${gpu.vram_bytes} declared`);
  });
  if (otherModels.length > 0) found.push({ code: 'other_model', message: `Another GPU model: ${otherModels.join('; ')}.` });
  if (short.length > 0) {
    found.push({
      code: 'vram_short',
      message: `VRAM more than ${VRAM_TOLERANCE_BPS / 100} % under the declared figure: ${short.join('; ')}.`,
    });
  }
  const model = declared[0]?.model;
  if (score !== null && body.benchmark?.backend === 'cuda' && model !== undefined) {
    const floor = classMinScoreOf(model);
    if (floor !== null && score < floor.minScore) {
      found.push({
        code: 'score_below_class',
        message: `The benchmark scored ${score}, far under the ${floor.minScore} a ${floor.family} reaches at the least.`,
      });
    }
  }
  return found;
}
