import type { ReliableAgentMessage } from '@ark/shared';
import type { Clock } from '../clock.js';
import type { Store } from '../store/db.js';
import { markMessageApplied } from '../store/channel-state.js';
import type { ChannelHandlers } from './handlers.js';

interface Job {
  machineId: string;
  msg: ReliableAgentMessage;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Applies reliable messages with group commit: messages that arrive while a transaction is running are applied
 * together in the next one, each with its own applied mark, so a burst of telemetry from many machines costs one
 * commit (one fsync on SQLite with synchronous=FULL) instead of one each. When idle, a message is applied alone at
 * once, so batching adds no latency. If a group fails, each of its messages is retried alone, so one failing
 * handler fails only its own message.
 *
 * On Postgres several groups run at once (each on its own pooled connection: statements of one transaction run one
 * after another, so a single lane would serialize every machine's telemetry behind one connection's round trips).
 * SQLite has one connection: one lane, bigger groups.
 */
export class GroupApplier {
  readonly #store: Store;
  readonly #handlers: ChannelHandlers;
  readonly #clock: Clock;
  readonly #maxBatch: number;
  readonly #lanes: number;
  #pending: Job[] = [];
  #activeLanes = 0;
  #idleWaiters: Array<() => void> = [];

  constructor(options: { store: Store; handlers: ChannelHandlers; clock: Clock; maxBatch?: number; lanes?: number }) {
    this.#store = options.store;
    this.#handlers = options.handlers;
    this.#clock = options.clock;
    const postgres = options.store.dialect === 'postgres';
    this.#maxBatch = options.maxBatch ?? (postgres ? 8 : 64);
    this.#lanes = options.lanes ?? (postgres ? 2 : 1);
  }

  /** Resolves once the message is applied (now, or earlier by another connection); rejects if its handler failed. */
  apply(machineId: string, msg: ReliableAgentMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ machineId, msg, resolve, reject });
      if (this.#activeLanes < this.#lanes) {
        this.#activeLanes += 1;
        void this.#lane();
      }
    });
  }

  /** Resolves once nothing is being applied. */
  idle(): Promise<void> {
    if (this.#activeLanes === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async #lane(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0, this.#maxBatch);
        await this.#commit(batch, true);
      }
    } finally {
      // In the same microtask as the last emptiness check: a job queued after it starts a new lane.
      this.#activeLanes -= 1;
      if (this.#activeLanes === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    }
  }

  async #commit(batch: Job[], retryAlone: boolean): Promise<void> {
    // One lock order for every replica (row locks on Postgres), so two groups never wait on each other in a cycle.
    if (batch.length > 1) batch.sort((a, b) => (a.machineId < b.machineId ? -1 : a.machineId > b.machineId ? 1 : a.msg.id - b.msg.id));
    try {
      const now = this.#clock.now();
      await this.#store.db.transaction().execute(async (trx) => {
        for (const job of batch) {
          if (await markMessageApplied(trx, job.machineId, job.msg.id, now)) await this.#handlers.apply(trx, job.machineId, job.msg, now);
        }
      });
    } catch (error) {
      if (batch.length === 1 || !retryAlone) {
        for (const job of batch) job.reject(error);
        return;
      }
      for (const job of batch) await this.#commit([job], false);
      return;
    }
    for (const job of batch) {
      this.#handlers.committed(job.machineId, job.msg);
      job.resolve();
    }
  }
}
