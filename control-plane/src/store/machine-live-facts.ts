import { BusyLinger } from './busy-linger.js';
import { compiledOnce } from './compiled.js';
import type { Store } from './db.js';
import type { MachineRow } from './machines.js';

// What a heartbeat decision reads of its machine (services/hosting/heartbeats.ts): whether the heartbeat changes
// anything but last-seen. Read for every heartbeat (about 667 a second at 10,000 agents), so it reads the few
// columns it needs (not the manifest and the rest of the row) and, on PostgreSQL, reads the machines of heartbeats
// that arrive together in one query instead of one round trip each; on SQLite, one machine a read, in a statement
// compiled once (store/compiled.ts).

/** The columns of a machine a heartbeat is judged against. */
export type MachineLiveFactsRow = Pick<MachineRow, 'id' | 'live_state' | 'live_error' | 'healthy' | 'problems' | 'last_heartbeat_at'>;

/** Machines whose ids are in `ids`, by id (an unknown id is absent). */
export async function readMachineLiveFacts(store: Store, ids: readonly string[]): Promise<Map<string, MachineLiveFactsRow>> {
  if (ids.length === 1) {
    const row = (await readOne(store.db, ids[0] as string)).rows[0];
    return new Map(row ? [[row.id, row]] : []);
  }
  const rows = await store.db.selectFrom('machines').select(LIVE_FACT_COLUMNS).where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row]));
}

const LIVE_FACT_COLUMNS = ['id', 'live_state', 'live_error', 'healthy', 'problems', 'last_heartbeat_at'] as const;

// One machine: every heartbeat's read on SQLite (which reads without batching), compiled once; while no transaction
// is open, it runs synchronously on the store's connection (compiled.ts).
const readOne = compiledOnce((db, id: string) => db.selectFrom('machines').select(LIVE_FACT_COLUMNS).where('id', '=', id));

/** Ids per query at most. */
const MAX_IDS = 500;

interface Waiter {
  resolve: (row: MachineLiveFactsRow | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * Reads machines' live facts; on PostgreSQL in batches: requests arriving while a read runs go together in the next one, and a busy
 * reader lingers `lingerMs` to gather more (busy-linger.ts, as the gateway's applier does for commits). Each request
 * still sees a read made after it arrived, so nothing is staler than a read of its own would be.
 */
export class MachineLiveFactsReader {
  readonly #store: Store;
  readonly #linger: BusyLinger;
  #waiting = new Map<string, Waiter[]>();
  #reading = false;

  constructor(store: Store, options: { lingerMs?: number } = {}) {
    this.#store = store;
    this.#linger = new BusyLinger(options.lingerMs ?? 5);
  }

  read(machineId: string): Promise<MachineLiveFactsRow | undefined> {
    // SQLite answers in-process without a round trip: each read is its own (at once outside transactions: compiled.ts).
    if (this.#store.dialect === 'sqlite') return readOne(this.#store.db, machineId).then((result) => result.rows[0]);
    return new Promise((resolve, reject) => {
      const waiters = this.#waiting.get(machineId);
      if (waiters) waiters.push({ resolve, reject });
      else this.#waiting.set(machineId, [{ resolve, reject }]);
      if (!this.#reading) {
        this.#reading = true;
        void this.#loop();
      }
    });
  }

  async #loop(): Promise<void> {
    try {
      while (this.#waiting.size > 0) {
        const wait = this.#linger.beforeBatch(this.#waiting.size >= MAX_IDS);
        if (wait) await wait;
        const batch = [...this.#waiting].slice(0, MAX_IDS);
        for (const [id] of batch) this.#waiting.delete(id);
        try {
          const rows = await readMachineLiveFacts(
            this.#store,
            batch.map(([id]) => id),
          );
          for (const [id, waiters] of batch) for (const waiter of waiters) waiter.resolve(rows.get(id));
        } catch (error) {
          for (const [, waiters] of batch) for (const waiter of waiters) waiter.reject(error);
        }
        this.#linger.batchDone();
      }
    } finally {
      this.#reading = false;
    }
  }
}
