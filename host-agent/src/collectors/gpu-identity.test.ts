import { readFileSync } from 'node:fs';
import { Value } from '@sinclair/typebox/value';
import { ReceiptGpu } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { missingAssignedGpus, parseGpuIdentityXml } from './gpu-identity.js';
import { RecordedGpuCollector } from './recorded-gpu-collector.js';

const MIB = 1024 * 1024;
const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');

describe('parseGpuIdentityXml on recorded real output', () => {
  it('reads the H200 recorded by Ark: uuid, ids, VBIOS, VRAM and versions', () => {
    const identity = parseGpuIdentityXml(fixture('h200-driver-580.xml'));
    expect(identity).toEqual({
      driver_version: '580.159.04',
      cuda_version: '13.0',
      gpus: [
        {
          index: 0,
          uuid: 'GPU-922096e2-67f8-a2c3-7257-0ea1ba2cdab2',
          name: 'NVIDIA H200',
          pci_address: '00000000:00:06.0',
          pci_device_id: '0x233510DE',
          pci_subsystem_id: '0x18BF10DE',
          vbios_version: '96.00.A5.00.1A',
          vram_bytes: 143771 * MIB,
        },
      ],
    });
  });

  it('tells two H200s of one model apart by UUID alone (both recorded by Ark on lent machines)', () => {
    const [first] = parseGpuIdentityXml(fixture('h200-driver-580.xml')).gpus;
    const [second] = parseGpuIdentityXml(fixture('h200-driver-580-second-card.xml')).gpus;
    expect(second).toEqual({ ...first, uuid: 'GPU-dc9d2831-6ed4-08c3-4cbc-dbb63664dab7' });
    expect(second?.uuid).not.toBe(first?.uuid);
  });

  it('reads two L4s in listing order (their minor numbers run the other way)', () => {
    const identity = parseGpuIdentityXml(fixture('l4-x2-driver-555.xml'));
    expect(identity.driver_version).toBe('555.42.06');
    expect(identity.cuda_version).toBe('12.5');
    expect(identity.gpus.map((gpu) => [gpu.index, gpu.pci_address, gpu.uuid, gpu.vram_bytes])).toEqual([
      [0, '00000000:01:00.0', 'GPU-c5533cd4-5a60-059e-348d-b6d7466932e4', 23034 * MIB],
      [1, '00000000:C1:00.0', 'GPU-128ab6fb-6ec9-fd74-b479-4a5fd14f55bd', 23034 * MIB],
    ]);
    for (const gpu of identity.gpus) {
      expect(gpu).toMatchObject({
        name: 'NVIDIA L4',
        pci_device_id: '0x27B810DE',
        pci_subsystem_id: '0x16CA10DE',
        vbios_version: '95.04.29.00.06',
      });
    }
  });

  it('reads an A100 in MIG mode as one GPU and a board partner RTX 4090 by its subsystem id', () => {
    const a100 = parseGpuIdentityXml(fixture('a100-sxm4-mig.xml'));
    expect(a100.gpus).toHaveLength(1);
    expect(a100.gpus[0]).toMatchObject({ name: 'NVIDIA A100-SXM4-40GB', pci_device_id: '0x20B010DE', vram_bytes: 40960 * MIB });
    const rtx = parseGpuIdentityXml(fixture('rtx-4090-driver-535.xml'));
    expect(rtx.gpus[0]).toMatchObject({ pci_device_id: '0x268410DE', pci_subsystem_id: '0x40BF1458', vbios_version: '95.02.18.80.5F' });
  });

  it('gives every recorded GPU in the shape the receipt schema accepts', () => {
    for (const name of [
      'a100-sxm4-mig.xml',
      'h200-driver-580.xml',
      'l4-x2-driver-555.xml',
      'rtx-4090-driver-535.xml',
      'rtx-pro-6000-driver-580.xml',
    ]) {
      const { gpus } = parseGpuIdentityXml(fixture(name));
      expect(gpus.length).toBeGreaterThan(0);
      for (const gpu of gpus) expect(Value.Errors(ReceiptGpu, gpu).First()).toBeUndefined();
    }
  });

  it('says what it could not read instead of inventing it (an N/A framebuffer is 0 bytes)', () => {
    const xml = `<?xml version="1.0" ?><nvidia_smi_log><driver_version>580.1</driver_version><cuda_version>N/A</cuda_version>
      <gpu id="00000000:0F:00.0"><product_name>NVIDIA GB10</product_name><uuid>GPU-1</uuid><vbios_version>N/A</vbios_version>
      <pci><pci_device_id>0x2E1210DE</pci_device_id></pci><fb_memory_usage><total>N/A</total></fb_memory_usage></gpu></nvidia_smi_log>`;
    expect(parseGpuIdentityXml(xml)).toEqual({
      driver_version: '580.1',
      gpus: [
        {
          index: 0,
          uuid: 'GPU-1',
          name: 'NVIDIA GB10',
          pci_address: '00000000:0F:00.0',
          pci_device_id: '0x2E1210DE',
          pci_subsystem_id: '',
          vbios_version: '',
          vram_bytes: 0,
        },
      ],
    });
  });

  it('throws on malformed XML; a machine without nvidia-smi output has no GPUs', async () => {
    expect(() => parseGpuIdentityXml('<nvidia_smi_log><gpu>')).toThrow();
    expect(await new RecordedGpuCollector([]).identity()).toEqual({ gpus: [] });
  });
});

describe('missingAssignedGpus', () => {
  const identity = parseGpuIdentityXml(fixture('l4-x2-driver-555.xml'));

  it('accepts assigned addresses in either spelling', () => {
    expect(missingAssignedGpus(identity, [])).toBeUndefined();
    expect(missingAssignedGpus(identity, ['0000:01:00.0', '00000000:C1:00.0', '0000:c1:00.0'])).toBeUndefined();
  });

  it('names the assigned GPU that is not there and what nvidia-smi lists', () => {
    const problem = missingAssignedGpus(identity, ['0000:01:00.0', '0000:3b:00.0']);
    expect(problem).toBe(
      'GPU identity check failed: assigned GPU 0000:3b:00.0 not found by nvidia-smi (it lists 00000000:01:00.0 (NVIDIA L4), 00000000:C1:00.0 (NVIDIA L4))',
    );
    expect(missingAssignedGpus({ gpus: [] }, ['0000:01:00.0'])).toMatch(/it lists none\)$/);
  });
});
