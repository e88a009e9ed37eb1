import type { HardwareReceiptBody } from '@ark/shared';
import { buildSelftestParts } from '../selftest/parts.js';
import { runSelftest } from '../selftest/selftest.js';
import { readIdentity } from '../state.js';
import { type CliContext, CliError } from './context.js';

/**
 * `ark-agent selftest`: GPU identity from nvidia-smi, then the pinned benchmark image run through the job runtime,
 * signed with this machine's key as a hardware receipt (host-agent/README.md "Self-test and hardware receipts").
 * Prints the figures, or with `--json` the signed receipt `{receipt, signature}` that anyone checks against the
 * machine's public key. Bounded by selftest_timeout_s: a run that does not finish is a failed receipt, not a hang.
 * Exit 0 when the receipt says ok, 1 when any part failed (the receipt says which).
 */
export async function selftestCommand(ctx: CliContext, options: { json?: boolean; image?: string }): Promise<number> {
  const { config } = ctx;
  const identity = await readIdentity(config.stateDir);
  if (identity === null) {
    throw new CliError(
      `not paired yet (no identity in ${config.stateDir}): a receipt is signed with the machine's key; run \`ark-agent pair\` first`,
    );
  }
  const logger = ctx.createLogger('stderr');
  const gpu = await ctx.createGpuCollector(logger);
  const parts = buildSelftestParts({
    config,
    machineId: identity.machine_id,
    secretKey: new Uint8Array(Buffer.from(identity.secret_key, 'base64')),
    identity: gpu,
    readMachineFacts: ctx.readMachineFacts,
    clock: ctx.clock,
    ...(ctx.createContainerRuntime === undefined ? {} : { runtime: ctx.createContainerRuntime() }),
  });
  const outcome = await runSelftest(parts, {
    trigger: 'manual',
    timeoutMs: config.selftest.timeoutMs,
    benchmark: true,
    ...(options.image === undefined ? {} : { benchmarkImage: options.image }),
  });
  if (options.json === true) ctx.out(`${JSON.stringify(outcome.signed)}\n`);
  else ctx.out(describeReceipt(outcome.body, identity.public_key));
  return outcome.body.ok ? 0 : 1;
}

/** The receipt for a person: what was seen, what was measured, and how to check it. */
export function describeReceipt(body: HardwareReceiptBody, publicKey: string): string {
  const lines: Array<[string, string]> = [
    ['machine', body.machine_id],
    ['receipt', `#${body.receipt_seq} (${body.trigger}), measured ${body.measured_at} in ${(body.duration_ms / 1000).toFixed(1)} s`],
    ['result', body.ok ? 'ok' : `FAILED: ${body.error ?? 'unknown'}`],
    ['driver / CUDA', `${body.driver_version ?? 'none'} / ${body.cuda_version ?? 'none'}`],
    ['cpu', `${body.cpu.model}, ${body.cpu.cores} cores; ${(body.ram_bytes / 1024 ** 3).toFixed(1)} GiB RAM`],
  ];
  if (body.gpus.length === 0) lines.push(['gpus', 'none (nvidia-smi lists no GPU)']);
  for (const gpu of body.gpus) {
    lines.push([
      `gpu ${gpu.index}`,
      `${gpu.name} ${gpu.uuid} at ${gpu.pci_address}, device ${gpu.pci_device_id} subsystem ${gpu.pci_subsystem_id}, VBIOS ${gpu.vbios_version}, ${(gpu.vram_bytes / 1024 ** 3).toFixed(1)} GiB`,
    ]);
  }
  const bench = body.benchmark;
  if (bench !== undefined) {
    lines.push(
      ['benchmark', `${bench.image} (${bench.backend})`],
      [
        'matrix multiply',
        `${bench.matmul_gflops} GFLOP/s (prompt ${bench.prompt_tokens_per_s} tokens/s x 2 x ${bench.model_params} params)`,
      ],
      [
        'memory bandwidth',
        `${bench.memory_bandwidth_gbps} GB/s (generation ${bench.generation_tokens_per_s} tokens/s x ${bench.model_bytes} bytes)`,
      ],
      ['disk', `write ${bench.disk_write_mbps} MB/s, read ${bench.disk_read_mbps} MB/s`],
    );
    if (bench.host_to_device_gbps !== undefined) lines.push(['host to device', `${bench.host_to_device_gbps} GB/s`]);
  }
  if (body.network !== undefined) {
    lines.push([
      'network',
      `down ${body.network.download_mbps ?? '?'} Mbps, up ${body.network.upload_mbps ?? '?'} Mbps, latency ${body.network.latency_ms ?? '?'} ms`,
    ]);
  }
  lines.push(['public key', `${publicKey} (ed25519; the signature covers the receipt's canonical JSON: --json prints both)`]);
  const width = Math.max(...lines.map(([label]) => label.length)) + 2;
  return `${lines.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}`).join('\n')}\n`;
}
