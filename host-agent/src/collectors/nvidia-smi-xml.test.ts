import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  MAX_GPUS_PER_SAMPLE,
  describeGpus,
  normalisePciAddress,
  parseBytes,
  parseNvidiaSmiXml,
  parseQuantity,
  readNvidiaSmiLog,
} from './nvidia-smi-xml.js';

const MIB = 1024 * 1024;

function fixture(name: string): string {
  return readFileSync(new URL(`../../../test/fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');
}

describe('parseNvidiaSmiXml on recorded output', () => {
  it('reads an A100 in MIG mode (driver 510, old power_readings) as one GPU', () => {
    const report = parseNvidiaSmiXml(fixture('a100-sxm4-mig.xml'));
    expect(report.driver_version).toBe('510.47.03');
    expect(report.cuda_version).toBe('11.6');
    // MIG instances live inside the <gpu> element; they are not GPUs of their own.
    expect(report.gpus).toEqual([
      {
        pci_address: '0000:00:04.0',
        model: 'NVIDIA A100-SXM4-40GB',
        uuid: 'GPU-27b94a00-ed54-5c24-b1fd-1054085de32a',
        vram_bytes: 40960n * BigInt(MIB),
        temperature_c: 36,
        power_watts: 66.92,
        memory_used_bytes: 38 * MIB,
      },
    ]);
    const [gpu] = report.gpus;
    // utilization and fan read N/A in this recording: absent, not 0.
    expect(gpu).not.toHaveProperty('utilization_pct');
    expect(gpu).not.toHaveProperty('fan_pct');
    expect(gpu).not.toHaveProperty('unified_memory_used_bytes');
  });

  it('reads a GeForce RTX 4090 on a Gigabyte board (driver 535, gpu_power_readings)', () => {
    const report = parseNvidiaSmiXml(fixture('rtx-4090-driver-535.xml'));
    expect(report.driver_version).toBe('535.86.05');
    expect(report.cuda_version).toBe('12.2');
    expect(report.gpus).toEqual([
      {
        pci_address: '0000:84:00.0',
        model: 'NVIDIA GeForce RTX 4090',
        uuid: 'GPU-71d1acc2-662d-2166-bf9f-65272d2fc437',
        vram_bytes: 24564n * BigInt(MIB),
        temperature_c: 40,
        // An idle card measures 0 %: a real zero is kept.
        utilization_pct: 0,
        power_watts: 26.84,
        fan_pct: 0,
        memory_used_bytes: 2 * MIB,
      },
    ]);
  });

  it('reads both L4s of a two-GPU host (driver 555) and lower-cases the bus', () => {
    const report = parseNvidiaSmiXml(fixture('l4-x2-driver-555.xml'));
    expect(report.driver_version).toBe('555.42.06');
    expect(report.cuda_version).toBe('12.5');
    expect(report.gpus).toEqual([
      {
        pci_address: '0000:01:00.0',
        model: 'NVIDIA L4',
        uuid: 'GPU-c5533cd4-5a60-059e-348d-b6d7466932e4',
        vram_bytes: 23034n * BigInt(MIB),
        temperature_c: 45,
        utilization_pct: 2,
        power_watts: 27.22,
        memory_used_bytes: 1 * MIB,
      },
      {
        pci_address: '0000:c1:00.0',
        model: 'NVIDIA L4',
        uuid: 'GPU-128ab6fb-6ec9-fd74-b479-4a5fd14f55bd',
        vram_bytes: 23034n * BigInt(MIB),
        temperature_c: 40,
        utilization_pct: 3,
        power_watts: 29.54,
        memory_used_bytes: 1 * MIB,
      },
    ]);
  });

  it('reads an H200 recorded by Ark on a lent machine (driver 580, CUDA 13.0, passed through to a VM)', () => {
    const report = parseNvidiaSmiXml(fixture('h200-driver-580.xml'));
    expect(report.driver_version).toBe('580.159.04');
    expect(report.cuda_version).toBe('13.0');
    expect(report.gpus).toEqual([
      {
        // The VM's bus, not the host's: <gpu id="00000000:00:06.0">.
        pci_address: '0000:00:06.0',
        model: 'NVIDIA H200',
        uuid: 'GPU-922096e2-67f8-a2c3-7257-0ea1ba2cdab2',
        // fb_memory_usage/total, which counts the 616 MiB the driver reserves (reserved + used + free = 616 + 0 + 143156).
        vram_bytes: 143771n * BigInt(MIB),
        temperature_c: 33,
        utilization_pct: 0,
        // instant_power_draw (80.92 W) is preferred to average_power_draw (80.55 W); power_draw is no longer printed.
        power_watts: 80.92,
        // An idle card with no process holds 0 MiB: a real zero is kept.
        memory_used_bytes: 0,
      },
    ]);
    const [gpu] = report.gpus;
    // A passively cooled SXM module prints fan_speed N/A; the processes element is present but empty.
    expect(gpu).not.toHaveProperty('fan_pct');
    expect(gpu).not.toHaveProperty('unified_memory_used_bytes');
  });

  it('reads driver 580 output: instant_power_draw when power_draw is N/A, padded values', () => {
    const report = parseNvidiaSmiXml(fixture('rtx-pro-6000-driver-580.xml'));
    expect(report).toEqual({
      gpus: [
        {
          pci_address: '0000:01:00.0',
          model: 'NVIDIA RTX PRO 6000 Blackwell',
          uuid: 'GPU-11111111-2222-3333-4444-555555555555',
          temperature_c: 37,
          power_watts: 66.84,
          fan_pct: 40,
        },
      ],
    });
  });
});

describe('GPU detection', () => {
  it('detects a GPU whatever its brand, subsystem vendor or product name', () => {
    // The RTX 4090 recording is a Gigabyte board (subsystem vendor 1458); make it stranger still.
    const xml = fixture('rtx-4090-driver-535.xml')
      .replace('<product_brand>GeForce</product_brand>', '<product_brand>Unknown</product_brand>')
      .replace('<pci_sub_system_id>40BF1458</pci_sub_system_id>', '<pci_sub_system_id>00001234</pci_sub_system_id>')
      .replace('<product_name>NVIDIA GeForce RTX 4090</product_name>', '<product_name>Graphics Device</product_name>');
    const [gpu] = parseNvidiaSmiXml(xml).gpus;
    expect(gpu?.pci_address).toBe('0000:84:00.0');
    expect(gpu?.model).toBe('Graphics Device');
  });

  it('takes the address from pci_bus_id when the id attribute is not one', () => {
    const xml = `<nvidia_smi_log><gpu id="GPU-x"><pci><pci_bus_id>00000000:3B:00.0</pci_bus_id></pci></gpu></nvidia_smi_log>`;
    expect(parseNvidiaSmiXml(xml).gpus).toEqual([{ pci_address: '0000:3b:00.0' }]);
  });

  it('reports no GPUs for a log without any', () => {
    const xml =
      '<?xml version="1.0" ?><nvidia_smi_log><driver_version>550.54.14</driver_version><attached_gpus>0</attached_gpus></nvidia_smi_log>';
    expect(parseNvidiaSmiXml(xml)).toEqual({ driver_version: '550.54.14', gpus: [] });
  });

  it(`keeps at most ${MAX_GPUS_PER_SAMPLE} GPUs`, () => {
    const gpus = Array.from({ length: MAX_GPUS_PER_SAMPLE + 5 }, (_, index) => {
      const bus = index.toString(16).padStart(2, '0');
      return `<gpu id="00000000:${bus}:00.0"><temperature><gpu_temp>30 C</gpu_temp></temperature></gpu>`;
    });
    const report = parseNvidiaSmiXml(`<nvidia_smi_log>${gpus.join('')}</nvidia_smi_log>`);
    expect(report.gpus).toHaveLength(MAX_GPUS_PER_SAMPLE);
  });

  it('throws on malformed XML so a collector can tell failure from "no GPUs"', () => {
    expect(() => parseNvidiaSmiXml('<nvidia_smi_log><gpu id="00000000:01:00.0">')).toThrow();
  });
});

describe('unreadable values', () => {
  it.each(['N/A', '[N/A]', '[Not Supported]', 'Not Supported', 'Requested functionality has been deprecated', 'Unknown Error', ''])(
    'treats %j as not measured',
    (text) => {
      const xml = `<nvidia_smi_log><gpu id="00000000:01:00.0">
        <product_name>${text}</product_name><fan_speed>${text}</fan_speed>
        <temperature><gpu_temp>${text}</gpu_temp></temperature>
        <utilization><gpu_util>${text}</gpu_util></utilization>
        <fb_memory_usage><total>${text}</total><used>${text}</used></fb_memory_usage>
        <gpu_power_readings><power_draw>${text}</power_draw><instant_power_draw>${text}</instant_power_draw></gpu_power_readings>
      </gpu></nvidia_smi_log>`;
      expect(parseNvidiaSmiXml(xml).gpus).toEqual([{ pci_address: '0000:01:00.0' }]);
    },
  );

  it('parses quantities only in their expected unit', () => {
    expect(parseQuantity('45 C', 'C')).toBe(45);
    expect(parseQuantity(' 250.50 W ', 'W')).toBe(250.5);
    expect(parseQuantity('30 %', '%')).toBe(30);
    expect(parseQuantity('30 W', '%')).toBeUndefined();
    expect(parseQuantity('[N/A]', 'W')).toBeUndefined();
    expect(parseBytes('1024 MiB')).toBe(1024 * MIB);
    expect(parseBytes('8 GiB')).toBe(8 * 1024 * MIB);
    expect(parseBytes('12 bank(s)')).toBeUndefined();
  });
});

describe('normalisePciAddress', () => {
  it.each([
    ['00000000:3B:00.0', '0000:3b:00.0'],
    ['0000000F:01:00.0', '000f:01:00.0'],
    ['00010000:01:00.1', '10000:01:00.1'],
    ['0000:3b:00.0', '0000:3b:00.0'],
    ['3B:00.0', '0000:3b:00.0'],
  ])('%s -> %s', (input, expected) => {
    expect(normalisePciAddress(input)).toBe(expected);
  });

  it.each(['GPU-abc', 'bus0', '00000000:3B:00.8', ''])('refuses %j', (input) => {
    expect(normalisePciAddress(input)).toBeUndefined();
  });
});

describe('unified memory', () => {
  // Written here, not recorded: no public GB10 recording exists (see the fixtures README).
  // It follows what GB10 owners report: every framebuffer figure N/A, per-process memory present.
  const gb10Shaped = `<?xml version="1.0" ?>
<nvidia_smi_log>
  <driver_version>580.126.09</driver_version>
  <cuda_version>13.0</cuda_version>
  <gpu id="0000000F:01:00.0">
    <product_name>NVIDIA GB10</product_name>
    <fb_memory_usage><total>N/A</total><reserved>N/A</reserved><used>N/A</used><free>N/A</free></fb_memory_usage>
    <temperature><gpu_temp>36 C</gpu_temp></temperature>
    <utilization><gpu_util>96 %</gpu_util></utilization>
    <processes>
      <process_info><pid>100</pid><type>C</type><used_memory>20434 MiB</used_memory></process_info>
      <process_info><pid>100</pid><type>G</type><used_memory>20434 MiB</used_memory></process_info>
      <process_info><pid>200</pid><type>G</type><used_memory>18 MiB</used_memory></process_info>
      <process_info><pid>300</pid><type>C</type><used_memory>N/A</used_memory></process_info>
    </processes>
  </gpu>
</nvidia_smi_log>`;

  it('reports the processes memory as unified memory, each pid once, and no framebuffer figures', () => {
    expect(parseNvidiaSmiXml(gb10Shaped).gpus).toEqual([
      {
        pci_address: '000f:01:00.0',
        model: 'NVIDIA GB10',
        temperature_c: 36,
        utilization_pct: 96,
        unified_memory_used_bytes: (20434 + 18) * MIB,
      },
    ]);
  });

  it('leaves VRAM out of the inventory instead of claiming 0', () => {
    expect(describeGpus(readNvidiaSmiLog(gb10Shaped))).toEqual({
      driver_version: '580.126.09',
      cuda_version: '13.0',
      gpus: [{ pci_address: '000f:01:00.0', model: 'NVIDIA GB10' }],
    });
  });

  it('does not report unified memory for a discrete card with processes', () => {
    for (const gpu of parseNvidiaSmiXml(fixture('l4-x2-driver-555.xml')).gpus) {
      expect(gpu).not.toHaveProperty('unified_memory_used_bytes');
    }
  });
});

describe('describeGpus', () => {
  it('gives model, VRAM, PCI address and versions for the enrollment manifest', () => {
    expect(describeGpus(readNvidiaSmiLog(fixture('l4-x2-driver-555.xml')))).toEqual({
      driver_version: '555.42.06',
      cuda_version: '12.5',
      gpus: [
        {
          pci_address: '0000:01:00.0',
          model: 'NVIDIA L4',
          vram_bytes: 24152899584n,
          uuid: 'GPU-c5533cd4-5a60-059e-348d-b6d7466932e4',
        },
        {
          pci_address: '0000:c1:00.0',
          model: 'NVIDIA L4',
          vram_bytes: 24152899584n,
          uuid: 'GPU-128ab6fb-6ec9-fd74-b479-4a5fd14f55bd',
        },
      ],
    });
  });

  it('describes the recorded H200 as enrollment would see it', () => {
    expect(describeGpus(readNvidiaSmiLog(fixture('h200-driver-580.xml')))).toEqual({
      driver_version: '580.159.04',
      cuda_version: '13.0',
      gpus: [
        {
          pci_address: '0000:00:06.0',
          model: 'NVIDIA H200',
          vram_bytes: 150754820096n,
          uuid: 'GPU-922096e2-67f8-a2c3-7257-0ea1ba2cdab2',
        },
      ],
    });
  });

  it('accepts the inner log object as well as the rooted document', () => {
    const rooted = readNvidiaSmiLog(fixture('a100-sxm4-mig.xml')) as { nvidia_smi_log: unknown };
    expect(describeGpus(rooted.nvidia_smi_log)).toEqual(describeGpus(rooted));
  });
});
