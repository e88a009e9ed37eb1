import { normalisePciAddress, type TelemetrySample } from '@ark/shared';

// A GPU lost per telemetry (issue 24 item 3). The agent's GPU collector reports every GPU `nvidia-smi -q -x` lists,
// keyed by PCI address; nvidia-smi leaves a lost GPU ("GPU is lost", fallen off the bus) out of its document, and a
// wedged driver or a failing nvidia-smi makes the collector report no GPUs at all. Either way the job's GPU is not in
// the sample, and that is the verdict: a GPU assigned to a RUNNING job missing from a sample that lists other GPUs is
// lost. (The collector exposes no Xid errors or per-device health flag, so absence is the only signal there is.) An
// empty sample is weaker evidence: one nvidia-smi run that timed out on a loaded machine also gives one, and failing
// every job of the machine on it would punish renter and host for a hiccup. So an empty sample decides only once the
// job's GPUs have gone unlisted for EMPTY_SAMPLE_GRACE_MS (a wedged driver that lists nothing for a minute: the job
// cannot be using GPUs the driver cannot list). Pure.

/** How long the GPUs may go unlisted by empty samples (a failing or hung nvidia-smi) before they count as lost. */
export const EMPTY_SAMPLE_GRACE_MS = 60_000;

export interface GpuVerdict {
  /** The latest sample (before any loss) in which all the job's GPUs were present; null: none in these samples. */
  healthyAt: Date | null;
  /** The first sample in which one of them was missing; null: none was. */
  lostAt: Date | null;
  /** The PCI addresses missing at `lostAt`. */
  missing: string[];
}

// nvidia-smi's `00000000:3B:00.0` and the agent's `0000:3b:00.0` are the same device.
const normal = (pci: string) => normalisePciAddress(pci) ?? pci.trim().toLowerCase();

/**
 * Reads one telemetry batch for one job. Samples are taken in time order; those before `since` (the meter's start:
 * the job's GPUs are only checked while it runs) or after `now` (an agent clock ahead of ours) say nothing. The
 * first sample missing a GPU decides: later samples do not make a lost GPU healthy again. An empty sample decides only
 * when it comes EMPTY_SAMPLE_GRACE_MS or more after the last point the GPUs were seen (this batch's, else
 * `lastHealthyAt` from earlier batches, else `since`).
 */
export function gpuVerdictOf(
  assigned: readonly string[],
  samples: readonly Pick<TelemetrySample, 'at' | 'devices'>[],
  since: Date,
  now: Date,
  lastHealthyAt: Date | null = null,
): GpuVerdict {
  const verdict: GpuVerdict = { healthyAt: null, lostAt: null, missing: [] };
  if (assigned.length === 0) return verdict;
  const ordered = samples
    .map((s) => ({ at: new Date(s.at), devices: new Set(s.devices.map((d) => normal(d.pci_address))) }))
    .filter((s) => !Number.isNaN(s.at.getTime()) && s.at.getTime() >= since.getTime() && s.at.getTime() <= now.getTime())
    .sort((a, b) => a.at.getTime() - b.at.getTime());
  for (const sample of ordered) {
    if (sample.devices.size === 0) {
      const seen = verdict.healthyAt ?? lastHealthyAt ?? since;
      if (sample.at.getTime() - seen.getTime() < EMPTY_SAMPLE_GRACE_MS) continue;
    }
    const missing = assigned.filter((pci) => !sample.devices.has(normal(pci)));
    if (missing.length > 0) return { ...verdict, lostAt: sample.at, missing };
    verdict.healthyAt = sample.at;
  }
  return verdict;
}
