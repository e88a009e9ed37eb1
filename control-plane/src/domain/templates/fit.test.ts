import { describe, expect, it } from 'vitest';
import { computeFit, machineDeviceVram } from './fit.js';

const GIB = 1_073_741_824n;
const template = (minVramBytes: bigint, recommendedVramBytes: bigint | null = null) => ({
  id: '41c913af-ff33-45f8-8580-244a680bbdc6',
  minVramBytes,
  recommendedVramBytes,
});

describe('computeFit', () => {
  it('fits exactly when the device has just the minimum', () => {
    expect(computeFit(template(24n * GIB), [24n * GIB])).toEqual({
      template_id: '41c913af-ff33-45f8-8580-244a680bbdc6',
      fits: true,
      min_vram_bytes: (24n * GIB).toString(),
      device_vram_bytes: (24n * GIB).toString(),
      device_count: 1,
      headroom_bytes: '0',
      shortfall_bytes: '0',
    });
  });

  it('reports headroom above the minimum', () => {
    const fit = computeFit(template(8n * GIB), [24n * GIB]);
    expect(fit.fits).toBe(true);
    expect(fit.headroom_bytes).toBe((16n * GIB).toString());
    expect(fit.shortfall_bytes).toBe('0');
  });

  it('reports the shortfall when one byte is missing', () => {
    const fit = computeFit(template(24n * GIB), [24n * GIB - 1n]);
    expect(fit).toMatchObject({ fits: false, headroom_bytes: '0', shortfall_bytes: '1', device_vram_bytes: (24n * GIB - 1n).toString() });
  });

  it('lets the smallest device decide, since every assigned device must hold the template', () => {
    const fit = computeFit(template(16n * GIB), [80n * GIB, 12n * GIB, 48n * GIB]);
    expect(fit).toMatchObject({
      fits: false,
      device_count: 3,
      device_vram_bytes: (12n * GIB).toString(),
      shortfall_bytes: (4n * GIB).toString(),
    });
    const ok = computeFit(template(16n * GIB), [80n * GIB, 16n * GIB, 48n * GIB]);
    expect(ok).toMatchObject({ fits: true, device_vram_bytes: (16n * GIB).toString(), headroom_bytes: '0' });
  });

  it('without devices only a template needing no VRAM fits', () => {
    expect(computeFit(template(0n), [])).toMatchObject({
      fits: true,
      device_vram_bytes: null,
      device_count: 0,
      headroom_bytes: '0',
      shortfall_bytes: '0',
    });
    expect(computeFit(template(GIB), [])).toMatchObject({
      fits: false,
      device_vram_bytes: null,
      device_count: 0,
      shortfall_bytes: GIB.toString(),
    });
  });

  it('tells whether the recommended VRAM is met when the template names one', () => {
    expect(computeFit(template(8n * GIB, 24n * GIB), [16n * GIB])).toMatchObject({
      fits: true,
      recommended_vram_bytes: (24n * GIB).toString(),
      meets_recommended: false,
    });
    expect(computeFit(template(8n * GIB, 24n * GIB), [24n * GIB, 80n * GIB]).meets_recommended).toBe(true);
    expect(computeFit(template(8n * GIB), [24n * GIB])).not.toHaveProperty('meets_recommended');
  });

  it('handles VRAM sizes beyond 2^53 exactly', () => {
    const huge = 2n ** 60n;
    expect(computeFit(template(huge), [huge + 1n])).toMatchObject({ fits: true, headroom_bytes: '1' });
  });
});

describe('machineDeviceVram', () => {
  it('stands the smallest VRAM in for each GPU; no GPUs, no devices', () => {
    expect(machineDeviceVram({ gpuCount: 2n, vramBytes: 16n * GIB })).toEqual([16n * GIB, 16n * GIB]);
    expect(machineDeviceVram({ gpuCount: 0, vramBytes: null })).toEqual([]);
    expect(machineDeviceVram({ gpuCount: 1, vramBytes: null })).toEqual([]);
  });
});
