import { randomUUID } from 'node:crypto';
import {
  type HardwareReceiptBody,
  type HardwareReceiptMessage,
  type ReceiptBenchmark,
  type ReceiptGpu,
  type SignedHardwareReceipt,
  signHardwareReceipt,
} from '@ark/shared';

// Hardware receipts as an agent would sign them, for tests of the control-plane side. The agent's own self-test
// (another part of issue 24 item 2) replaces these in the end-to-end path; until then the figures here are named
// for what they are.

/**
 * FIXTURE figures for a CPU benchmark, in the receipt's format (llama.cpp through node-llama-cpp on its CPU build):
 * not a measurement of any machine. They are plausible for a 16-core x86 server on a ~120 MB model and only need to
 * be stable: the score they give is round(sqrt(matmul_gflops * memory_bandwidth_gbps) * 10) / 10 = 154.9.
 */
export const FIXTURE_CPU_BENCHMARK: Omit<ReceiptBenchmark, 'image'> = {
  backend: 'cpu',
  matmul_gflops: 480,
  memory_bandwidth_gbps: 50,
  prompt_tokens_per_s: 1920,
  generation_tokens_per_s: 416.7,
  model_bytes: 120_000_000,
  model_params: 125_000_000,
  disk_write_mbps: 1400,
  disk_read_mbps: 1300,
};

/**
 * The H200 figures recorded by test/fixtures/gpu-bench/h200-driver-580.json (run 1: cuBLAS fp16 matmul 894.1 TFLOP/s,
 * device-to-device 4278.1 GB/s, host-to-device 55.4 GB/s; disk 1.4 / 1.3 GB/s), in the receipt's units. A real run of
 * a real card, though of the CUDA probe rather than the llama.cpp benchmark.
 */
export const RECORDED_H200_BENCHMARK: Omit<ReceiptBenchmark, 'image'> = {
  backend: 'cuda',
  matmul_gflops: 894_100,
  memory_bandwidth_gbps: 4278.1,
  host_to_device_gbps: 55.4,
  prompt_tokens_per_s: 3_576_400,
  generation_tokens_per_s: 35_650.8,
  model_bytes: 120_000_000,
  model_params: 125_000_000,
  disk_write_mbps: 1400,
  disk_read_mbps: 1300,
};

/** The two NVIDIA L4 of test/fixtures/nvidia-smi/l4-x2-driver-555.xml, as the receipt names them (23034 MiB each). */
export const RECORDED_L4_GPUS: ReceiptGpu[] = [
  {
    index: 0,
    uuid: 'GPU-c5533cd4-5a60-059e-348d-b6d7466932e4',
    name: 'NVIDIA L4',
    pci_address: '00000000:01:00.0',
    pci_device_id: '0x27B810DE',
    pci_subsystem_id: '0x16CA10DE',
    vbios_version: '95.04.29.00.06',
    vram_bytes: 23034 * 1024 * 1024,
  },
  {
    index: 1,
    uuid: 'GPU-128ab6fb-6ec9-fd74-b479-4a5fd14f55bd',
    name: 'NVIDIA L4',
    pci_address: '00000000:C1:00.0',
    pci_device_id: '0x27B810DE',
    pci_subsystem_id: '0x16CA10DE',
    vbios_version: '95.04.29.00.06',
    vram_bytes: 23034 * 1024 * 1024,
  },
];

export const BENCHMARK_IMAGE = `127.0.0.1:5000/ark/selftest@sha256:${'5'.repeat(64)}`;

/** A receipt body for a machine; a CPU-only one with the fixture benchmark unless told otherwise. */
export function receiptBody(
  machineId: string,
  receiptSeq: number,
  at: Date,
  overrides: Partial<HardwareReceiptBody> = {},
): HardwareReceiptBody {
  return {
    version: 1,
    machine_id: machineId,
    receipt_seq: receiptSeq,
    trigger: 'enrollment',
    started_at: new Date(at.getTime() - 42_000).toISOString(),
    measured_at: at.toISOString(),
    duration_ms: 42_000,
    ok: true,
    gpus: [],
    cpu: { model: 'AMD Ryzen 9 7950X', cores: 16 },
    ram_bytes: 137438953472,
    benchmark: { image: BENCHMARK_IMAGE, ...FIXTURE_CPU_BENCHMARK },
    ...overrides,
  };
}

let nextMessageId = 1_000_000;

/** The channel message carrying a signed receipt (message id and sequence as a test needs them, not as an agent counts). */
export function hardwareReceiptMessage(signed: SignedHardwareReceipt): HardwareReceiptMessage {
  return { v: 1, t: 'hardware_receipt', sid: randomUUID(), seq: 1, id: nextMessageId++, ...signed };
}

export { signHardwareReceipt };
