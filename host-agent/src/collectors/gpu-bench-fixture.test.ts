import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseNvidiaSmiXml, readNvidiaSmiLog } from './nvidia-smi-xml.js';

// The probe figures recorded on a lent H200 (test/fixtures/gpu-bench/README.md) are the reference for the
// hardware-receipt benchmark (issue 24). Nothing runs the probe yet; this keeps the recording well-formed
// and tied to the nvidia-smi document recorded on the same machine in the same run.

const fixturesDir = new URL('../../../test/fixtures/', import.meta.url);
const readFixture = (path: string) => readFileSync(new URL(path, fixturesDir), 'utf8');

const PROBE_FIGURES = [
  'device_to_device_gb_s',
  'host_to_device_gb_s',
  'device_to_host_gb_s',
  'matmul_fp16_tflop_s',
  'matmul_bf16_tflop_s',
  'matmul_n',
] as const;

type BenchRecording = {
  gpu: string;
  uuid: string;
  driver: string;
  cuda: string;
  recorded: string;
  runs: Record<string, unknown>[];
  disk: { write_gb_s: number; read_gb_s: number; bytes: number; write_s: number; read_s: number };
};

const bench = JSON.parse(readFixture('gpu-bench/h200-driver-580.json')) as BenchRecording;
const smiXml = readFixture('nvidia-smi/h200-driver-580.xml');

describe('recorded H200 probe figures', () => {
  it('holds three runs, each with exactly the figures probe.cu prints, all positive', () => {
    expect(bench.runs).toHaveLength(3);
    for (const run of bench.runs) {
      expect(Object.keys(run).sort()).toEqual([...PROBE_FIGURES].sort());
      for (const figure of PROBE_FIGURES) {
        const value = run[figure];
        expect(typeof value === 'number' && Number.isFinite(value) && value > 0, `${figure} = ${String(value)}`).toBe(true);
      }
      expect(run.matmul_n).toBe(8192);
    }
  });

  it("keeps dd's own rounded rates consistent with its byte count and seconds", () => {
    // 4096 blocks of 1 MiB; dd prints decimal GB/s to two significant figures.
    expect(bench.disk.bytes).toBe(4096 * 1024 * 1024);
    expect(Number((bench.disk.bytes / bench.disk.write_s / 1e9).toFixed(1))).toBe(bench.disk.write_gb_s);
    expect(Number((bench.disk.bytes / bench.disk.read_s / 1e9).toFixed(1))).toBe(bench.disk.read_gb_s);
  });

  it('names the GPU, driver and CUDA that the nvidia-smi recording of the same machine reports', () => {
    const report = parseNvidiaSmiXml(smiXml);
    expect(report.gpus).toHaveLength(1);
    expect(report.gpus[0]?.model).toBe(bench.gpu);
    expect(report.gpus[0]?.uuid).toBe(bench.uuid);
    expect(report.driver_version).toBe(bench.driver);
    expect(report.cuda_version).toBe(bench.cuda);
  });

  it('is dated the day of the nvidia-smi recording', () => {
    // The parser does not expose the document's timestamp; read it from the raw log ("Fri Nov 27 13:06:06 2026").
    const log = readNvidiaSmiLog(smiXml) as { nvidia_smi_log: { timestamp: string } };
    const [, month, day, , year] = log.nvidia_smi_log.timestamp.split(/\s+/);
    const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
    const monthNumber = String(months.indexOf(month ?? '') + 1).padStart(2, '0');
    expect(`${year}-${monthNumber}-${String(day).padStart(2, '0')}`).toBe(bench.recorded);
  });
});
