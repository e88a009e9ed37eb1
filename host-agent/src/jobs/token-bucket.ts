// A token bucket in bytes: what one job's logs may push through the channel (issue 25 item 2). It fills at
// `ratePerS` up to `burst`; readings of the time come from the caller (the injected clock), so a test steps it.

export class TokenBucket {
  #tokens: number;
  #atMs: number;

  constructor(
    readonly ratePerS: number,
    readonly burst: number,
    nowMs: number,
  ) {
    this.#tokens = burst;
    this.#atMs = nowMs;
  }

  #refill(nowMs: number): void {
    const elapsedMs = Math.max(0, nowMs - this.#atMs);
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsedMs * this.ratePerS) / 1000);
    this.#atMs = nowMs;
  }

  /** Takes `amount` when the bucket holds it; false (nothing taken) when it does not. */
  take(amount: number, nowMs: number): boolean {
    this.#refill(nowMs);
    if (this.#tokens < amount) return false;
    this.#tokens -= amount;
    return true;
  }

  /** How long until `amount` (at most the burst) is in the bucket, in ms; 0 when it is now. */
  waitMs(amount: number, nowMs: number): number {
    this.#refill(nowMs);
    const missing = Math.min(amount, this.burst) - this.#tokens;
    return missing <= 0 ? 0 : Math.ceil((missing * 1000) / this.ratePerS);
  }
}
