import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RecordedGpuCollector } from './recorded-gpu-collector.js';

const fixturePath = (name: string) => fileURLToPath(new URL(`../../../test/fixtures/nvidia-smi/${name}`, import.meta.url));

describe('RecordedGpuCollector', () => {
  it('replays recordings in order and starts over', async () => {
    const collector = await RecordedGpuCollector.fromFiles([fixturePath('a100-sxm4-mig.xml'), fixturePath('l4-x2-driver-555.xml')]);
    const addresses = async () => (await collector.sample()).map((gpu) => gpu.pci_address);
    expect(await addresses()).toEqual(['0000:00:04.0']);
    expect(await addresses()).toEqual(['0000:01:00.0', '0000:c1:00.0']);
    expect(await addresses()).toEqual(['0000:00:04.0']);
  });

  it('describes the first recording for enrollment', async () => {
    const collector = await RecordedGpuCollector.fromFiles([fixturePath('rtx-4090-driver-535.xml')]);
    expect(await collector.inventory()).toEqual({
      driver_version: '535.86.05',
      cuda_version: '12.2',
      gpus: [
        {
          pci_address: '0000:84:00.0',
          model: 'NVIDIA GeForce RTX 4090',
          vram_bytes: 24564n * 1024n * 1024n,
          uuid: 'GPU-71d1acc2-662d-2166-bf9f-65272d2fc437',
        },
      ],
    });
  });

  it('behaves like a machine without GPUs when given nothing', async () => {
    const collector = new RecordedGpuCollector([]);
    expect(await collector.sample()).toEqual([]);
    expect(await collector.inventory()).toEqual({ gpus: [] });
  });

  it('fails at construction on a broken recording', () => {
    expect(() => new RecordedGpuCollector(['<nvidia_smi_log><gpu>'])).toThrow();
  });
});
