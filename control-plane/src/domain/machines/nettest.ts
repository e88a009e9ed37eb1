import type { RunNettestBody } from '@ark/shared';

// The network measurement a host asks for (contract part 4): download and upload Mbps and latency against a
// public endpoint, bounded to 30 s in all. Sizes are large enough to fill a fast link for a few seconds and
// small enough that a slow one still finishes inside the bound (the agent reports what it measured by then).

export const NETTEST_TIMEOUT_MS = 30_000;
export const NETTEST_DOWNLOAD_BYTES = 25_000_000;
export const NETTEST_UPLOAD_BYTES = 10_000_000;

export function nettestCommandBody(endpoint: string): RunNettestBody {
  return { endpoint, timeout_ms: NETTEST_TIMEOUT_MS, download_bytes: NETTEST_DOWNLOAD_BYTES, upload_bytes: NETTEST_UPLOAD_BYTES };
}
