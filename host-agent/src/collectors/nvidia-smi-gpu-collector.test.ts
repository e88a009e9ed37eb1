import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NvidiaSmiGpuCollector } from './nvidia-smi-gpu-collector.js';
import type { CollectorLogger } from './types.js';

const fixturePath = (name: string) => fileURLToPath(new URL(`../../../test/fixtures/nvidia-smi/${name}`, import.meta.url));

function recordingLogger(): CollectorLogger & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    warnings,
    warn(detail, message) {
      warnings.push(`${message} ${JSON.stringify(detail)}`);
    },
  };
}

describe('NvidiaSmiGpuCollector', () => {
  let dir: string;

  // Stand-in binaries: shell scripts that behave like nvidia-smi does on a real host.
  async function fakeNvidiaSmi(name: string, script: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, `#!/bin/sh\n${script}\n`);
    await chmod(path, 0o755);
    return path;
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ark-nvidia-smi-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reports nothing, once logged, when the binary does not exist', async () => {
    const logger = recordingLogger();
    const collector = new NvidiaSmiGpuCollector({ binaryPath: join(dir, 'no-such-nvidia-smi'), logger });
    expect(await collector.sample()).toEqual([]);
    expect(await collector.sample()).toEqual([]);
    expect(await collector.inventory()).toEqual({ gpus: [] });
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toContain('ENOENT');
  });

  it('runs the binary with -q -x and parses what it prints', async () => {
    const binaryPath = await fakeNvidiaSmi(
      'nvidia-smi-l4',
      `[ "$1 $2" = "-q -x" ] || exit 2\ncat '${fixturePath('l4-x2-driver-555.xml')}'`,
    );
    const collector = new NvidiaSmiGpuCollector({ binaryPath, logger: recordingLogger() });
    const gpus = await collector.sample();
    expect(gpus.map((gpu) => [gpu.pci_address, gpu.temperature_c, gpu.power_watts])).toEqual([
      ['0000:01:00.0', 45, 27.22],
      ['0000:c1:00.0', 40, 29.54],
    ]);
    const inventory = await collector.inventory();
    expect(inventory.driver_version).toBe('555.42.06');
    expect(inventory.gpus.map((gpu) => gpu.vram_bytes)).toEqual([24152899584n, 24152899584n]);
  });

  it('keeps working after stderr warnings', async () => {
    const binaryPath = await fakeNvidiaSmi(
      'nvidia-smi-warns',
      `echo 'WARNING: infoROM is corrupted at gpu 0000:84:00.0' >&2\ncat '${fixturePath('rtx-4090-driver-535.xml')}'`,
    );
    const gpus = await new NvidiaSmiGpuCollector({ binaryPath, logger: recordingLogger() }).sample();
    expect(gpus.map((gpu) => gpu.pci_address)).toEqual(['0000:84:00.0']);
  });

  it('reports nothing when the driver cannot be reached, and logs again only after a recovery', async () => {
    const flag = join(dir, 'driver-up');
    const binaryPath = await fakeNvidiaSmi(
      'nvidia-smi-flaky',
      [
        `if [ -e '${flag}' ]; then cat '${fixturePath('a100-sxm4-mig.xml')}'; exit 0; fi`,
        `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." `,
        'exit 9',
      ].join('\n'),
    );
    const logger = recordingLogger();
    const collector = new NvidiaSmiGpuCollector({ binaryPath, logger });
    expect(await collector.sample()).toEqual([]);
    expect(await collector.sample()).toEqual([]);
    expect(logger.warnings).toHaveLength(1);

    await writeFile(flag, '');
    expect((await collector.sample()).map((gpu) => gpu.pci_address)).toEqual(['0000:00:04.0']);
    await rm(flag);
    expect(await collector.sample()).toEqual([]);
    expect(logger.warnings).toHaveLength(2);
  });

  it('parses the healthy GPUs when nvidia-smi exits non-zero after a complete document', async () => {
    const binaryPath = await fakeNvidiaSmi(
      'nvidia-smi-partial',
      `cat '${fixturePath('rtx-pro-6000-driver-580.xml')}'\necho 'Unable to determine the device handle for GPU 0000:02:00.0: Unknown Error' >&2\nexit 15`,
    );
    const gpus = await new NvidiaSmiGpuCollector({ binaryPath, logger: recordingLogger() }).sample();
    expect(gpus.map((gpu) => gpu.pci_address)).toEqual(['0000:01:00.0']);
  });

  it('kills a hung nvidia-smi at the timeout and reports nothing', async () => {
    const binaryPath = await fakeNvidiaSmi('nvidia-smi-hangs', 'exec sleep 30');
    const logger = recordingLogger();
    const started = Date.now();
    const gpus = await new NvidiaSmiGpuCollector({ binaryPath, timeoutMs: 300, logger }).sample();
    expect(gpus).toEqual([]);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(logger.warnings).toHaveLength(1);
  });

  it('refuses output beyond the buffer limit', async () => {
    const binaryPath = await fakeNvidiaSmi('nvidia-smi-big', `cat '${fixturePath('rtx-4090-driver-535.xml')}'`);
    const gpus = await new NvidiaSmiGpuCollector({ binaryPath, maxOutputBytes: 4096, logger: recordingLogger() }).sample();
    expect(gpus).toEqual([]);
  });

  it('runs nvidia-smi once for overlapping callers', async () => {
    const counter = join(dir, 'runs');
    const binaryPath = await fakeNvidiaSmi(
      'nvidia-smi-counted',
      `echo run >> '${counter}'\nsleep 0.2\ncat '${fixturePath('a100-sxm4-mig.xml')}'`,
    );
    const collector = new NvidiaSmiGpuCollector({ binaryPath, logger: recordingLogger() });
    const [first, second] = await Promise.all([collector.sample(), collector.inventory()]);
    expect(first).toHaveLength(1);
    expect(second.gpus).toHaveLength(1);
    expect((await readFile(counter, 'utf8')).trim().split('\n')).toHaveLength(1);
  });
});
