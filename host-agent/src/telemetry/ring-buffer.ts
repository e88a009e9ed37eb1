/** A fixed-capacity FIFO: pushing into a full buffer drops the oldest item, so memory never grows. */
export class RingBuffer<T> {
  readonly #items: Array<T | undefined>;
  #head = 0;
  #size = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    this.#items = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Adds an item; answers how many old items were dropped to make room (0 or 1). */
  push(item: T): number {
    const tail = (this.#head + this.#size) % this.capacity;
    this.#items[tail] = item;
    if (this.#size < this.capacity) {
      this.#size += 1;
      return 0;
    }
    this.#head = (this.#head + 1) % this.capacity;
    return 1;
  }

  /** The oldest `count` items (fewer if the buffer holds fewer), left in place. */
  peek(count: number): T[] {
    const taken = Math.min(Math.max(0, count), this.#size);
    const out: T[] = [];
    for (let i = 0; i < taken; i += 1) out.push(this.#items[(this.#head + i) % this.capacity] as T);
    return out;
  }

  /** Removes the oldest `count` items. */
  discard(count: number): void {
    const taken = Math.min(Math.max(0, count), this.#size);
    for (let i = 0; i < taken; i += 1) this.#items[(this.#head + i) % this.capacity] = undefined;
    this.#head = (this.#head + taken) % this.capacity;
    this.#size -= taken;
  }

  /** Removes items from the oldest end while `shouldDiscard` says they should go; answers how many were removed. */
  discardWhile(shouldDiscard: (item: T) => boolean): number {
    let removed = 0;
    while (this.#size > 0 && shouldDiscard(this.#items[this.#head] as T)) {
      this.discard(1);
      removed += 1;
    }
    return removed;
  }
}
