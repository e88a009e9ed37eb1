import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Prometheus series of the agent gateway. Label sets are bounded: message types and close reasons are enums. */
export interface GatewayMetrics {
  connections: Gauge;
  frames: Counter<'type'>;
  /** From the frame's arrival to the end of its handling (queue wait, verification, handler, acknowledgement). */
  frameHandling: Histogram<'type'>;
  closes: Counter<'reason'>;
  /** Handshakes completed, by how the connection authenticates its frames ('mac' or 'signature'). */
  handshakes: Counter<'auth'>;
  /** Reliable messages per group commit, by applier queue ('main', or the type applied apart: 'meter_receipt'). */
  applyGroups: Histogram<'queue'>;
}

function reuse<T>(registry: Registry | undefined, name: string, make: () => T): T {
  return (registry?.getSingleMetric(name) as T | undefined) ?? make();
}

export function createGatewayMetrics(registry?: Registry): GatewayMetrics {
  const registers = registry ? [registry] : [];
  return {
    connections: reuse(
      registry,
      'ark_channel_connections',
      () => new Gauge({ name: 'ark_channel_connections', help: 'Agent connections past the handshake, on this replica', registers }),
    ),
    frames: reuse(
      registry,
      'ark_channel_frames_total',
      () =>
        new Counter({ name: 'ark_channel_frames_total', help: 'Agent frames handled, by message type', labelNames: ['type'], registers }),
    ),
    frameHandling: reuse(
      registry,
      'ark_channel_frame_handling_seconds',
      () =>
        new Histogram({
          name: 'ark_channel_frame_handling_seconds',
          help: 'Time from a frame arriving to its handling being done, by message type',
          labelNames: ['type'],
          buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5],
          registers,
        }),
    ),
    closes: reuse(
      registry,
      'ark_channel_closes_total',
      () =>
        new Counter({
          name: 'ark_channel_closes_total',
          help: 'Agent connections closed or refused, by reason',
          labelNames: ['reason'],
          registers,
        }),
    ),
    handshakes: reuse(
      registry,
      'ark_channel_handshakes_total',
      () =>
        new Counter({
          name: 'ark_channel_handshakes_total',
          help: "Agent handshakes completed, by how the connection authenticates its frames: 'mac' (keys agreed) or 'signature'",
          labelNames: ['auth'],
          registers,
        }),
    ),
    applyGroups: reuse(
      registry,
      'ark_channel_apply_group_size',
      () =>
        new Histogram({
          name: 'ark_channel_apply_group_size',
          help: "Reliable agent messages applied per transaction (group commit), by applier queue: 'main' or a type grouped apart",
          labelNames: ['queue'],
          buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
          registers,
        }),
    ),
  };
}

/** The refusal reasons a hardware receipt may be counted under (always exposed, at 0 until one happens). */
const RECEIPT_REFUSAL_REASONS = ['forged', 'tampered', 'wrong_machine', 'replayed', 'unknown_machine'] as const;

/**
 * ark_hardware_receipts_refused_total{reason}: hardware receipts the gateway refused (issue 24 item 2). The use case
 * counts in plain numbers (services/hosting/hardware-receipts.ts); the counter reads them when scraped.
 */
export function registerReceiptRefusalMetric(registry: Registry, counts: { byReason: ReadonlyMap<string, number> }): void {
  if (registry.getSingleMetric('ark_hardware_receipts_refused_total')) return;
  new Counter({
    name: 'ark_hardware_receipts_refused_total',
    help: 'Hardware receipts refused (and acknowledged, never stored), by reason',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const reason of RECEIPT_REFUSAL_REASONS) this.inc({ reason }, counts.byReason.get(reason) ?? 0);
    },
  });
}
