// Every expiry, heartbeat, retention and meter decision reads a Clock, so tests advance time instead of sleeping.
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.#ms = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(at: Date | string): void {
    this.#ms = new Date(at).getTime();
  }
}

/** ISO string with milliseconds, UTC: sorts lexicographically, which the store relies on. */
export function iso(date: Date): string {
  return date.toISOString();
}
