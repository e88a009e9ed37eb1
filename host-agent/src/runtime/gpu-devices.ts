// The control plane assigns GPUs by PCI address; Docker device requests name devices by UUID or
// index. The collectors' inventory (nvidia-smi) knows both.
import { normalisePciAddress } from '../collectors/nvidia-smi-xml.js';
import type { GpuInventory } from '../collectors/types.js';

export class GpuAssignmentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GpuAssignmentError';
  }
}

/**
 * Device IDs for the assigned PCI addresses, in the order given: the GPU's UUID where nvidia-smi
 * reported one, else its index in nvidia-smi's (PCI-ordered) listing. An address the inventory does
 * not know is refused rather than silently attaching another GPU.
 */
export function gpuDeviceIds(pciAddresses: readonly string[], inventory: GpuInventory): string[] {
  if (pciAddresses.length === 0) return [];
  const byAddress = new Map<string, { uuid?: string; index: number }>();
  inventory.gpus.forEach((gpu, index) => {
    const address = normalisePciAddress(gpu.pci_address);
    if (address !== undefined) byAddress.set(address, { uuid: gpu.uuid, index });
  });
  const ids: string[] = [];
  for (const requested of pciAddresses) {
    const address = normalisePciAddress(requested);
    const gpu = address === undefined ? undefined : byAddress.get(address);
    if (gpu === undefined) throw new GpuAssignmentError(`GPU ${requested.slice(0, 32)} is not on this machine`);
    const id = gpu.uuid !== undefined && gpu.uuid !== '' ? gpu.uuid : String(gpu.index);
    if (ids.includes(id)) throw new GpuAssignmentError(`GPU ${requested.slice(0, 32)} is assigned twice`);
    ids.push(id);
  }
  return ids;
}
