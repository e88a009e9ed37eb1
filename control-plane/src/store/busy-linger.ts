/** A batch finished within this long before the next one starts means its worker is busy: worth lingering. */
const BUSY_WINDOW_MS = 100;

/**
 * The wait a batching worker takes before gathering its next batch while busy (the gateway's applier before a group
 * commit, the heartbeats' live-facts reader before a read): messages that arrive one at a time under load then share
 * a commit or a query, while an idle worker starts at once. A batching delay measured in real time (performance.now
 * and Node's timer), never a decision on the injected clock: a test's manual clock must not stall it.
 */
export class BusyLinger {
  readonly #ms: number;
  #lastDoneAt = Number.NEGATIVE_INFINITY;

  /** `ms` 0 never waits. */
  constructor(ms: number) {
    this.#ms = ms;
  }

  /**
   * The wait when the last batch finished moments ago and the next one is not already full, else null: no wait at
   * all, not even a microtask, so an idle worker takes its batch in the same turn the first message arrived.
   */
  beforeBatch(full: boolean): Promise<void> | null {
    if (this.#ms <= 0 || full || performance.now() - this.#lastDoneAt >= BUSY_WINDOW_MS) return null;
    return new Promise<void>((resolve) => setTimeout(resolve, this.#ms));
  }

  /** A batch finished (committed, read, or failed). */
  batchDone(): void {
    this.#lastDoneAt = performance.now();
  }
}
