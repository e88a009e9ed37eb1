import type { HardwareReceiptBody, MachineManifest } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { classMinScoreOf, receiptContradictions } from './hardware-receipts.js';

const L4_VRAM = 24_152_899_584;
const manifest = (gpus = 2): MachineManifest => ({
  hostname: 'rig',
  gpus: Array.from({ length: gpus }, (_, i) => ({
    pci_address: `00000000:0${i + 1}:00.0`,
    model: 'NVIDIA L4',
    vram_bytes: String(L4_VRAM),
  })),
  cpu: { model: 'AMD EPYC', cores: 16 },
  ram_bytes: '68719476736',
  disk_bytes: '1000000000000',
  os: 'Ubuntu 24.04',
  agent_version: '0.1.0',
});
const receipt = (overrides: Partial<HardwareReceiptBody> = {}, gpus = 2): HardwareReceiptBody => ({
  version: 1,
  machine_id: '3f1c6a3e-2b7d-4a59-9c1e-0d5b8e6f7a21',
  receipt_seq: 1,
  trigger: 'enrollment',
  started_at: '2026-11-27T20:00:00.000Z',
  measured_at: '2026-11-27T20:01:00.000Z',
  duration_ms: 60_000,
  ok: true,
  gpus: Array.from({ length: gpus }, (_, i) => ({
    index: i,
    uuid: `GPU-${i}`,
    name: 'NVIDIA L4',
    pci_address: `00000000:0${i + 1}:00.0`,
    pci_device_id: '0x27B810DE',
    pci_subsystem_id: '0x16CA10DE',
    vbios_version: '95.04.5A.00.01',
    vram_bytes: L4_VRAM,
  })),
  cpu: { model: 'AMD EPYC', cores: 16 },
  ram_bytes: 68719476736,
  ...overrides,
});
const codes = (m: MachineManifest, b: HardwareReceiptBody, score: number | null = null) =>
  receiptContradictions(m, b, score).map((c) => c.code);

describe('hardware receipt contradictions', () => {
  it('finds none when the receipt shows what the manifest declares', () => {
    expect(codes(manifest(), receipt())).toEqual([]);
  });

  it('finds fewer GPUs than declared (two declared, one measured)', () => {
    const found = receiptContradictions(manifest(2), receipt({}, 1), null);
    expect(found.map((c) => c.code)).toEqual(['fewer_gpus']);
    expect(found[0]?.message).toBe('The machine declares 2 GPU(s) but the self-test found 1.');
  });

  it('finds another model at a declared GPU’s address', () => {
    const body = receipt();
    body.gpus[1] = { ...body.gpus[1]!, name: 'NVIDIA T4' };
    expect(codes(manifest(), body)).toEqual(['other_model']);
  });

  it('allows VRAM up to 3 % under the declared figure, not more', () => {
    const body = receipt();
    body.gpus[0] = { ...body.gpus[0]!, vram_bytes: Math.ceil(L4_VRAM * 0.97) };
    expect(codes(manifest(), body)).toEqual([]);
    body.gpus[0] = { ...body.gpus[0]!, vram_bytes: Math.floor(L4_VRAM * 0.96) };
    expect(codes(manifest(), body)).toEqual(['vram_short']);
  });

  it('judges a CUDA score against the declared model’s class floor, and never a CPU-only machine', () => {
    const cuda = receipt({
      benchmark: {
        image: `ghcr.io/ark/bench@sha256:${'a'.repeat(64)}`,
        backend: 'cuda',
        matmul_gflops: 100,
        memory_bandwidth_gbps: 10,
        prompt_tokens_per_s: 1,
        generation_tokens_per_s: 1,
        model_bytes: 1,
        model_params: 1,
        disk_write_mbps: 1,
        disk_read_mbps: 1,
      },
    });
    expect(codes(manifest(), cuda, 31.6)).toEqual(['score_below_class']);
    expect(codes(manifest(), cuda, 300)).toEqual([]);
    const cpuOnly = manifest(0);
    expect(codes(cpuOnly, receipt({ benchmark: { ...cuda.benchmark!, backend: 'cpu' } }, 0), 0.5)).toEqual([]);
  });

  it('counts a failed self-test as a contradiction, with its reason', () => {
    const found = receiptContradictions(manifest(), receipt({ ok: false, error: 'benchmark timed out after 600000 ms' }), null);
    expect(found).toEqual([{ code: 'selftest_failed', message: 'The self-test failed: benchmark timed out after 600000 ms.' }]);
  });

  it('matches GPU families as whole words, longest first', () => {
    expect(classMinScoreOf('NVIDIA L4')?.family).toBe('L4');
    expect(classMinScoreOf('NVIDIA L40S')?.family).toBe('L40S');
    expect(classMinScoreOf('NVIDIA GeForce RTX 4090')?.family).toBe('RTX 4090');
    expect(classMinScoreOf('NVIDIA A100-SXM4-80GB')?.family).toBe('A100');
    expect(classMinScoreOf('NVIDIA A10G')?.family).toBe('A10G');
    expect(classMinScoreOf('Some Other Card')).toBeNull();
  });
});
