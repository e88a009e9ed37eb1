import type { RunNettestBody } from '@ark/shared';

export interface NettestBounds {
  /** The host's own ceilings: a command asking for more transfers only this much. */
  maxDownloadBytes: number;
  maxUploadBytes: number;
  pingCount: number;
}

export interface NettestMeasurement {
  duration_ms: number;
  latency_ms?: number;
  download_mbps?: number;
  upload_mbps?: number;
  /** Set when a phase could not be measured; the phases that could are still reported. */
  error?: string;
}

export interface MeasureOptions {
  bounds: NettestBounds;
  fetch?: typeof fetch;
  /** Monotonic milliseconds; performance.now by default. */
  monotonicMs?: () => number;
}

const UPLOAD_CHUNK_BYTES = 64 * 1024;
const ERROR_CHARS_MAX = 500;
// Shares of the time left when each phase starts: pings are quick, and download and upload split the rest.
const LATENCY_SHARE = 0.2;
const DOWNLOAD_SHARE = 0.5;

const round2 = (value: number) => Math.round(value * 100) / 100;
const mbps = (bytes: number, elapsedMs: number) => round2((bytes * 8) / (Math.max(elapsedMs, 0.001) / 1000) / 1_000_000);

/**
 * Measures latency (pings to `${endpoint}/ping`), download (`${endpoint}/download?bytes=N`) and upload
 * (`POST ${endpoint}/upload`) from this host's network namespace. The whole measurement ends within the
 * command's timeout_ms: each phase gets a share of the time left, and a transfer cut short by its share
 * reports the throughput of what it moved, which is still a measurement of the link.
 */
export async function measureNetwork(command: RunNettestBody, options: MeasureOptions): Promise<NettestMeasurement> {
  const fetchImpl = options.fetch ?? fetch;
  const clock = options.monotonicMs ?? (() => performance.now());
  const started = clock();
  const deadline = started + command.timeout_ms;
  const problems: string[] = [];
  const result: NettestMeasurement = { duration_ms: 0 };

  let base: string;
  try {
    const url = new URL(command.endpoint);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
    base = url.toString().replace(/\/+$/, '');
  } catch {
    return { duration_ms: 0, error: 'the measurement endpoint is not an http(s) URL' };
  }

  const overall = new AbortController();
  const overallTimer = setTimeout(() => overall.abort(new Error('time bound reached')), command.timeout_ms);
  const phaseSignal = (share: number) => {
    const budgetMs = Math.max(1, Math.floor((deadline - clock()) * share));
    return AbortSignal.any([overall.signal, AbortSignal.timeout(budgetMs)]);
  };

  try {
    // Latency: one ping to open the connection, then the median of the rest.
    try {
      const signal = phaseSignal(LATENCY_SHARE);
      await ping(fetchImpl, `${base}/ping`, signal);
      const rounds: number[] = [];
      for (let i = 0; i < options.bounds.pingCount; i += 1) {
        const sent = clock();
        try {
          await ping(fetchImpl, `${base}/ping`, signal);
        } catch (error) {
          // Out of time with some rounds measured: report those.
          if (signal.aborted && rounds.length > 0) break;
          throw error;
        }
        rounds.push(clock() - sent);
      }
      if (rounds.length === 0) throw new Error('no ping answered in time');
      result.latency_ms = round2(median(rounds));
    } catch (error) {
      problems.push(`latency: ${describe(error)}`);
    }

    // Download: stream and discard.
    try {
      const bytesWanted = Math.min(command.download_bytes, options.bounds.maxDownloadBytes);
      const signal = phaseSignal(DOWNLOAD_SHARE);
      const sent = clock();
      const moved = await download(fetchImpl, `${base}/download?bytes=${bytesWanted}`, signal);
      if (moved === 0) throw new Error('no bytes arrived');
      result.download_mbps = mbps(moved, clock() - sent);
    } catch (error) {
      problems.push(`download: ${describe(error)}`);
    }

    // Upload: zeros, streamed, counted as the request body is pulled.
    try {
      const bytesWanted = Math.min(command.upload_bytes, options.bounds.maxUploadBytes);
      const signal = phaseSignal(1);
      const sent = clock();
      const moved = await upload(fetchImpl, `${base}/upload`, bytesWanted, signal);
      if (moved === 0) throw new Error('no bytes were sent');
      result.upload_mbps = mbps(moved, clock() - sent);
    } catch (error) {
      problems.push(`upload: ${describe(error)}`);
    }
  } finally {
    clearTimeout(overallTimer);
  }

  result.duration_ms = Math.max(0, Math.round(clock() - started));
  if (problems.length > 0) result.error = problems.join('; ').slice(0, ERROR_CHARS_MAX);
  return result;
}

async function ping(fetchImpl: typeof fetch, url: string, signal: AbortSignal): Promise<void> {
  const response = await fetchImpl(url, { signal });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`ping answered HTTP ${response.status}`);
}

/** Answers the bytes received; a phase bound cut short still counts what arrived. */
async function download(fetchImpl: typeof fetch, url: string, signal: AbortSignal): Promise<number> {
  const response = await fetchImpl(url, { signal });
  if (!response.ok || response.body === null) {
    await response.body?.cancel();
    throw new Error(`download answered HTTP ${response.status}`);
  }
  const reader = response.body.getReader();
  let moved = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      moved += value.byteLength;
    }
  } catch (error) {
    if (!signal.aborted || moved === 0) throw error;
  } finally {
    reader.releaseLock();
  }
  return moved;
}

async function upload(fetchImpl: typeof fetch, url: string, bytes: number, signal: AbortSignal): Promise<number> {
  const chunk = new Uint8Array(UPLOAD_CHUNK_BYTES);
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const size = Math.min(UPLOAD_CHUNK_BYTES, bytes - pulled);
      if (size <= 0) {
        controller.close();
        return;
      }
      controller.enqueue(size === UPLOAD_CHUNK_BYTES ? chunk : chunk.subarray(0, size));
      pulled += size;
    },
  });
  try {
    const response = await fetchImpl(url, {
      method: 'POST',
      body,
      signal,
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(bytes) },
      // Node's fetch needs this for a streamed request body.
      duplex: 'half',
    } as RequestInit);
    const text = await response.text();
    if (!response.ok) throw new Error(`upload answered HTTP ${response.status}`);
    // The endpoint says how much it read; trust the smaller figure.
    const counted = (() => {
      try {
        const parsed = JSON.parse(text) as { bytes?: unknown };
        return typeof parsed.bytes === 'number' ? parsed.bytes : undefined;
      } catch {
        return undefined;
      }
    })();
    return counted === undefined ? pulled : Math.min(counted, pulled);
  } catch (error) {
    // Cut short by the bound: what left before it was still sent over the link (less what sits in buffers).
    if (signal.aborted && pulled > 0) return pulled;
    throw error;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'AbortError' || error.name === 'TimeoutError') return 'timed out';
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${(cause as NodeJS.ErrnoException).code ?? cause.message}` : '';
    return `${error.message}${detail}`.slice(0, 200);
  }
  return String(error).slice(0, 200);
}
