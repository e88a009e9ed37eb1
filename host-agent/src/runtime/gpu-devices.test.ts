import { describe, expect, it } from 'vitest';
import { GpuAssignmentError, gpuDeviceIds } from './gpu-devices.js';

const inventory = {
  gpus: [
    { pci_address: '0000:3b:00.0', model: 'NVIDIA L4', uuid: 'GPU-11111111-2222-3333-4444-555555555555' },
    { pci_address: '0000:5e:00.0', model: 'NVIDIA L4' },
  ],
};

describe('gpuDeviceIds', () => {
  it('names no device without GPUs', () => {
    expect(gpuDeviceIds([], inventory)).toEqual([]);
    expect(gpuDeviceIds([], { gpus: [] })).toEqual([]);
  });

  it('maps PCI addresses (in any spelling) to UUIDs, else to the nvidia-smi index', () => {
    expect(gpuDeviceIds(['0000:3B:00.0'], inventory)).toEqual(['GPU-11111111-2222-3333-4444-555555555555']);
    expect(gpuDeviceIds(['5e:00.0', '00000000:3b:00.0'], inventory)).toEqual(['1', 'GPU-11111111-2222-3333-4444-555555555555']);
  });

  it('refuses a GPU that is not here, or one assigned twice', () => {
    expect(() => gpuDeviceIds(['0000:af:00.0'], inventory)).toThrow(GpuAssignmentError);
    expect(() => gpuDeviceIds(['not-a-pci-address'], inventory)).toThrow(/not on this machine/);
    expect(() => gpuDeviceIds(['0000:3b:00.0', '3b:00.0'], inventory)).toThrow(/assigned twice/);
  });
});
