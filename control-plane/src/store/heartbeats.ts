import { sql } from 'kysely';
import { type Clock, type ClockTimer, iso } from '../clock.js';
import type { Store } from './db.js';
import { extendOnlineIntervals } from './reliability.js';

// Write-behind of heartbeats that change nothing but last-seen (last_heartbeat_at, uptime_s).
//
// Why: one transaction per heartbeat is one fsync per heartbeat on SQLite with synchronous=FULL (about 667 a
// second at 10,000 agents beating every 15 s). Heartbeats that change state (the first one, go-live, a health
// flip, new problems) are still applied at once by recordHeartbeat; only the plain "still here" ones wait here and
// are written together, one transaction per flush interval.
//
// Readers in this process see buffered heartbeats through the buffer's lastHeartbeatAt() (the composition root builds
// one buffer per process and injects it: services/hosting reads and writes it). Other replicas read the table,
// which lags by at most one flush interval (1 s): far below the liveness grace (3 heartbeat intervals, 45 s), so a
// machine never looks offline because of it. A crash loses at most one interval of last-seen timestamps, which only
// makes a machine look up to 1 s staler than it is; its next heartbeat (15 s) repairs that.

export interface PendingHeartbeat {
  at: string;
  uptimeS: bigint;
}

export interface HeartbeatBufferOptions {
  /** How often buffered heartbeats are written (on the clock the buffer is given). */
  flushIntervalMs?: number;
  /** Rows per UPDATE statement (3 bind parameters each). */
  chunkRows?: number;
  /** Machines buffered at most; one more forces a flush first. */
  maxPending?: number;
  /** Where a failed background flush is reported. */
  onError?: (error: unknown) => void;
  /** The liveness grace: a heartbeat within it of the last one extends the machine's online interval (reliability). */
  onlineGraceMs?: number;
}

/** What readers of last-seen need: a machine's last heartbeat as this process knows it. */
export interface HeartbeatReader {
  /** The stored last heartbeat, or a newer one still buffered in this process. */
  lastHeartbeatAt(machineId: string, stored: string | null): string | null;
}

export const HEARTBEAT_FLUSH_INTERVAL_MS = 1000;
const CHUNK_ROWS = 1000;
const MAX_PENDING = 50_000;
/** Three 15-second heartbeat intervals, the default liveness grace. */
const ONLINE_GRACE_MS = 45_000;

export class HeartbeatBuffer implements HeartbeatReader {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #flushIntervalMs: number;
  readonly #chunkRows: number;
  readonly #maxPending: number;
  readonly #onError: (error: unknown) => void;
  readonly #onlineGraceMs: number;
  #pending = new Map<string, PendingHeartbeat>();
  /** The batch being written: still visible to readers until its transaction committed. */
  #writing = new Map<string, PendingHeartbeat>();
  #flushing: Promise<number> | null = null;
  #timer: ClockTimer | null = null;
  #stopped = false;

  constructor(store: Store, clock: Clock, options: HeartbeatBufferOptions = {}) {
    this.#store = store;
    this.#clock = clock;
    this.#flushIntervalMs = options.flushIntervalMs ?? HEARTBEAT_FLUSH_INTERVAL_MS;
    this.#chunkRows = options.chunkRows ?? CHUNK_ROWS;
    this.#maxPending = options.maxPending ?? MAX_PENDING;
    this.#onError = options.onError ?? (() => {});
    this.#onlineGraceMs = options.onlineGraceMs ?? ONLINE_GRACE_MS;
  }

  get size(): number {
    return this.#pending.size;
  }

  /** Buffers a last-seen update; the latest one per machine wins. */
  async add(machineId: string, at: Date, uptimeS: bigint): Promise<void> {
    if (!this.#pending.has(machineId) && this.#pending.size >= this.#maxPending) await this.flush();
    const entry = { at: iso(at), uptimeS };
    const previous = this.#pending.get(machineId);
    if (!previous || previous.at <= entry.at) this.#pending.set(machineId, entry);
    // After close nothing flushes later: write now.
    if (this.#stopped) await this.flush();
    else this.#startTimer();
  }

  /** A heartbeat was written directly (it changed state): anything buffered for the machine is older. */
  forget(machineId: string): void {
    this.#pending.delete(machineId);
  }

  /** The latest buffered heartbeat of a machine, if any. */
  pendingAt(machineId: string): string | undefined {
    return this.#pending.get(machineId)?.at ?? this.#writing.get(machineId)?.at;
  }

  lastHeartbeatAt(machineId: string, stored: string | null): string | null {
    const pending = this.pendingAt(machineId);
    if (pending === undefined) return stored;
    return stored === null || pending > stored ? pending : stored;
  }

  /** Writes everything buffered in one transaction; returns the rows written. Concurrent calls queue. */
  async flush(): Promise<number> {
    while (this.#flushing) await this.#flushing.catch(() => 0);
    if (this.#pending.size === 0) return 0;
    this.#writing = this.#pending;
    this.#pending = new Map();
    this.#flushing = this.#write(this.#writing);
    try {
      return await this.#flushing;
    } catch (error) {
      // Keep what failed unless a newer heartbeat replaced it meanwhile; the next flush retries.
      for (const [id, entry] of this.#writing) {
        const newer = this.#pending.get(id);
        if (!newer || newer.at < entry.at) this.#pending.set(id, entry);
      }
      throw error;
    } finally {
      this.#writing = new Map();
      this.#flushing = null;
    }
  }

  /** Stops the timer and writes what is left (a clean shutdown loses nothing). */
  async close(): Promise<void> {
    this.#stopped = true;
    this.#clock.clearInterval(this.#timer);
    this.#timer = null;
    await this.flush();
  }

  #startTimer(): void {
    if (this.#timer || this.#stopped) return;
    this.#timer = this.#clock.setInterval(() => {
      if (this.#pending.size === 0 || this.#flushing) return;
      // Returned so that a ManualClock's advance() waits for the write.
      return this.flush().catch(this.#onError);
    }, this.#flushIntervalMs);
    this.#timer.unref();
  }

  async #write(batch: Map<string, PendingHeartbeat>): Promise<number> {
    const rows = [...batch];
    let written = 0;
    await this.#store.db.transaction().execute(async (trx) => {
      for (let i = 0; i < rows.length; i += this.#chunkRows) {
        const chunk = rows.slice(i, i + this.#chunkRows);
        const values = sql.join(chunk.map(([id, e]) => sql`(${id}, ${e.at}, ${e.uptimeS.toString()})`));
        // VALUES columns are column1.. on both dialects; never move last-seen backwards (another replica or a
        // state-changing heartbeat may have written a newer one).
        const result = await sql`
          UPDATE machines SET
            last_heartbeat_at = v.column2,
            uptime_s = CAST(v.column3 AS bigint),
            updated_at = v.column2
          FROM (VALUES ${values}) AS v
          WHERE machines.id = v.column1
            AND (machines.last_heartbeat_at IS NULL OR machines.last_heartbeat_at < v.column2)
        `.execute(trx);
        written += Number(result.numAffectedRows ?? 0n);
        // The same chunk extends each machine's online interval: one interval row per machine, not one per heartbeat.
        await extendOnlineIntervals(
          trx,
          chunk.map(([id, e]) => ({ machineId: id, at: e.at, cutoff: iso(new Date(Date.parse(e.at) - this.#onlineGraceMs)) })),
        );
      }
    });
    return written;
  }
}
