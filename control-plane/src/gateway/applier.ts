import type { ReliableAgentMessage } from '@ark/shared';
import type { Clock } from '../clock.js';
import type { Store } from '../store/db.js';
import { markMessageApplied, markMessagesApplied } from '../store/channel-state.js';
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
 * after another, so a single lane would serialize every machine's telemetry behind one connection's round trips),
 * and a group costs a fixed number of round trips, not a few per message: its marks are written in three statements
 * (store/channel-state.ts, markMessagesApplied) and its meter receipts charged in five (services/jobs/
 * metering-batch.ts). SQLite has one connection and no round trips: one lane, each message's statements in turn.
 *
 * The queue is bounded (`maxQueued`): past it, apply waits for room, so a session stops reading its socket and its
 * own inbox bound holds the rest. A message's promise resolves only after its group committed, and the session
 * acknowledges it to the agent only then: a crash before the commit loses nothing acknowledged, and the agent's
 * resend after it is deduplicated by the mark written in the same transaction as the effect.
 */
export class GroupApplier {
  readonly #store: Store;
  readonly #handlers: ChannelHandlers;
  readonly #clock: Clock;
  readonly #maxBatch: number;
  readonly #lanes: number;
  readonly #maxQueued: number;
  #pending: Job[] = [];
  #roomWaiters: Array<() => void> = [];
  #activeLanes = 0;
  #idleWaiters: Array<() => void> = [];

  constructor(options: {
    store: Store;
    handlers: ChannelHandlers;
    clock: Clock;
    maxBatch?: number;
    lanes?: number;
    maxQueued?: number;
  }) {
    this.#store = options.store;
    this.#handlers = options.handlers;
    this.#clock = options.clock;
    const postgres = options.store.dialect === 'postgres';
    this.#maxBatch = options.maxBatch ?? (postgres ? 256 : 64);
    this.#lanes = options.lanes ?? (postgres ? 2 : 1);
    this.#maxQueued = options.maxQueued ?? 20_000;
  }

  /** Resolves once the message is applied (now, or earlier by another connection); rejects if its handler failed. */
  async apply(machineId: string, msg: ReliableAgentMessage): Promise<void> {
    while (this.#pending.length >= this.#maxQueued) await new Promise<void>((room) => this.#roomWaiters.push(room));
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
        for (const room of this.#roomWaiters.splice(0, batch.length)) room();
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
        if (batch.length > 1 && this.#store.dialect === 'postgres') {
          const marks = await markMessagesApplied(
            trx,
            batch.map((job) => ({ machineId: job.machineId, id: job.msg.id })),
            now,
          );
          await this.#handlers.applyAll(
            trx,
            batch.filter((_, i) => marks[i]),
            now,
          );
          return;
        }
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
