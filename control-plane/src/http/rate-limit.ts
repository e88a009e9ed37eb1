import type { Redis } from 'ioredis';
import { DomainError } from '../errors.js';

/** Fixed-window counters. `consume` answers whether this hit is still inside the limit. */
export interface RateLimiter {
  consume(key: string, limit: number, windowMs: number, now: Date): Promise<boolean>;
  close(): Promise<void>;
}

/** One process's counters. Bounded: the oldest windows are dropped past `maxKeys`. */
export class MemoryRateLimiter implements RateLimiter {
  readonly #windows = new Map<string, { startMs: number; count: number }>();
  constructor(private readonly maxKeys = 100_000) {}

  async consume(key: string, limit: number, windowMs: number, now: Date): Promise<boolean> {
    const nowMs = now.getTime();
    const startMs = nowMs - (nowMs % windowMs);
    const full = `${key}|${windowMs}`;
    let window = this.#windows.get(full);
    if (!window || window.startMs !== startMs) {
      if (!window && this.#windows.size >= this.maxKeys) this.#evict(nowMs);
      window = { startMs, count: 0 };
      this.#windows.set(full, window);
    }
    window.count += 1;
    return window.count <= limit;
  }

  #evict(nowMs: number): void {
    for (const [key, window] of this.#windows) {
      if (nowMs - window.startMs > 3_600_000 || this.#windows.size >= this.maxKeys) this.#windows.delete(key);
      if (this.#windows.size < this.maxKeys * 0.9) break;
    }
  }

  async close(): Promise<void> {}
}

/** Shared counters for several replicas. */
export class RedisRateLimiter implements RateLimiter {
  constructor(private readonly redis: Redis) {}

  async consume(key: string, limit: number, windowMs: number, now: Date): Promise<boolean> {
    const nowMs = now.getTime();
    const bucket = `ark:rl:${key}:${windowMs}:${nowMs - (nowMs % windowMs)}`;
    const [[, count]] = (await this.redis.multi().incr(bucket).pexpire(bucket, windowMs).exec()) as [[unknown, number]];
    return count <= limit;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

const MINUTE_MS = 60_000;

/**
 * Counts one sign-in attempt (sign-up, sign-in, step-up, wallet registration) under every key, against the
 * per-minute budget; any exhausted key answers 429 UNAVAILABLE.
 */
export async function limitAuthAttempts(limiter: RateLimiter, input: { keys: string[]; perMinute: number; now: Date }): Promise<void> {
  let allowed = true;
  for (const key of input.keys) {
    if (!(await limiter.consume(`auth:${key}`, input.perMinute, MINUTE_MS, input.now))) allowed = false;
  }
  if (!allowed) throw new DomainError('UNAVAILABLE', 'Too many attempts; wait a minute and retry.');
}
