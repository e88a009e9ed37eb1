import { describe, expect, it } from 'vitest';
import { gpuVerdictOf } from './gpu-health.js';

const since = new Date('2026-01-01T00:00:00.000Z');
const now = new Date('2026-01-01T00:10:00.000Z');
const sample = (minute: number, gpus: string[]) => ({
  at: new Date(since.getTime() + minute * 60_000).toISOString(),
  devices: gpus.map((pci_address) => ({ pci_address })),
});

describe('gpuVerdictOf', () => {
  it('takes samples in time order: the last one listing all the GPUs before the first one missing one', () => {
    const verdict = gpuVerdictOf(
      ['0000:01:00.0', '0000:02:00.0'],
      [
        sample(5, ['0000:02:00.0']),
        sample(3, ['0000:01:00.0', '0000:02:00.0']),
        sample(4, ['0000:01:00.0', '0000:02:00.0']),
        sample(6, ['0000:01:00.0', '0000:02:00.0']),
      ],
      since,
      now,
    );
    expect(verdict).toEqual({
      healthyAt: new Date(since.getTime() + 4 * 60_000),
      lostAt: new Date(since.getTime() + 5 * 60_000),
      missing: ['0000:01:00.0'],
    });
  });

  it("matches nvidia-smi's 8-digit upper-case form to the agent's, and ignores samples before the meter or after now", () => {
    expect(gpuVerdictOf(['00000000:3B:00.0'], [sample(1, ['0000:3b:00.0'])], since, now)).toEqual({
      healthyAt: new Date(since.getTime() + 60_000),
      lostAt: null,
      missing: [],
    });
    expect(gpuVerdictOf(['0000:3b:00.0'], [sample(-1, []), sample(11, [])], since, now)).toEqual({
      healthyAt: null,
      lostAt: null,
      missing: [],
    });
    // An empty sample (nvidia-smi failed or lists nothing) is a loss for a job holding GPUs once they went unlisted for
    // the grace period; a job with none is never checked.
    expect(gpuVerdictOf(['0000:3b:00.0'], [sample(2, [])], since, now).missing).toEqual(['0000:3b:00.0']);
    expect(gpuVerdictOf([], [sample(2, [])], since, now)).toEqual({ healthyAt: null, lostAt: null, missing: [] });
  });

  it('takes one empty sample for a hiccup, and empty samples for the grace period after the GPUs were last seen for a loss', () => {
    const gpu = ['0000:3b:00.0'];
    const seen = new Date(since.getTime() + 60_000);
    // Seen at minute 1, nothing listed half a minute later: a timed-out nvidia-smi, not a verdict.
    expect(gpuVerdictOf(gpu, [sample(1, gpu), sample(1.5, [])], since, now)).toEqual({ healthyAt: seen, lostAt: null, missing: [] });
    // The point the GPUs were last seen may come from an earlier batch.
    expect(gpuVerdictOf(gpu, [sample(1.5, [])], since, now, seen).lostAt).toBeNull();
    expect(gpuVerdictOf(gpu, [sample(2, [])], since, now, seen)).toEqual({
      healthyAt: null,
      lostAt: new Date(since.getTime() + 120_000),
      missing: gpu,
    });
    // A sample that lists other GPUs but not the job's decides at once.
    expect(gpuVerdictOf(gpu, [sample(1, gpu), sample(1.1, ['0000:3c:00.0'])], since, now).missing).toEqual(gpu);
    expect(gpuVerdictOf([], [sample(2, [])], since, now)).toEqual({ healthyAt: null, lostAt: null, missing: [] });
  });
});
