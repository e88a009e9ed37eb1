import type { NettestReceiptMessage } from '@ark/shared';

/** A machine's network facts from one measurement receipt, as the machine row stores them. */
export interface MeasuredNetwork {
  downloadMbps: number | null;
  uploadMbps: number | null;
  latencyMs: number | null;
  /** When it was measured, never later than the control plane's now (a clock ahead of ours is not trusted). */
  measuredAt: Date;
  error: string | null;
}

export function measuredNetworkOf(receipt: NettestReceiptMessage, now: Date): MeasuredNetwork {
  const measuredAt = new Date(receipt.measured_at);
  return {
    downloadMbps: receipt.download_mbps ?? null,
    uploadMbps: receipt.upload_mbps ?? null,
    latencyMs: receipt.latency_ms ?? null,
    measuredAt: measuredAt.getTime() > now.getTime() ? now : measuredAt,
    error: receipt.error ?? null,
  };
}
