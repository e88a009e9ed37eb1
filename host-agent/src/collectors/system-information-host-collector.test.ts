import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SystemInformationHostCollector } from './system-information-host-collector.js';
import type { CollectorLogger } from './types.js';

function recordingLogger(): CollectorLogger & { warnings: unknown[] } {
  const warnings: unknown[] = [];
  return {
    warnings,
    warn(detail) {
      warnings.push(detail);
    },
  };
}

describe('SystemInformationHostCollector on this machine', () => {
  it('reports sane host figures', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'ark-state-'));
    try {
      const logger = recordingLogger();
      const collector = new SystemInformationHostCollector({ stateDir, logger });
      await collector.sample();
      const sample = await collector.sample();
      expect(sample.memory_used_bytes).toBeGreaterThan(0);
      expect(sample.uptime_s).toBeGreaterThan(0);
      expect(sample.disk_free_bytes).toBeGreaterThan(0);
      expect(Number.isSafeInteger(sample.disk_free_bytes)).toBe(true);
      expect(sample.cpu_utilization_pct).toBeGreaterThanOrEqual(0);
      expect(sample.cpu_utilization_pct).toBeLessThanOrEqual(100);
      expect(sample.load1).toBeGreaterThanOrEqual(0);
      expect(logger.warnings).toEqual([]);
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it('leaves out a figure it cannot read and keeps the others', async () => {
    const logger = recordingLogger();
    const collector = new SystemInformationHostCollector({ stateDir: '/no/such/state/dir', logger });
    const sample = await collector.sample();
    expect(sample).not.toHaveProperty('disk_free_bytes');
    expect(sample.memory_used_bytes).toBeGreaterThan(0);
    await collector.sample();
    expect(logger.warnings).toEqual([expect.objectContaining({ field: 'disk_free_bytes' })]);
  });
});
