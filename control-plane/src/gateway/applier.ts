import type { ReliableAgentMessage } from '@ark/shared';
import type { Clock } from '../clock.js';
import type { Store } from '../store/db.js';
import { BusyLinger } from '../store/busy-linger.js';
import { markMessageApplied, markMessagesApplied } from '../store/channel-state.js';
import { inTransactionWithRetry } from '../store/transaction.js';
import type { ChannelHandlers } from './handlers.js';

interface Job {
  machineId: string;
  msg: ReliableAgentMessage;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** One queue and its lanes: the messages of one class are grouped together, never with another class's. */
interface Queue {
  readonly name: string;
  pending: Job[];
  activeLanes: number;
  readonly linger: BusyLinger;
}

/**
 * The message types applied in groups of their own on Postgres: meter receipts lock ledger rows (the fees shard, the
 * hosts' earnings) that other replicas' receipts lock too, and a telemetry sample grouped with them would wait on
 * those locks. Apart, telemetry and heartbeats never wait behind the ledger. A machine has one reliable message in
 * flight at a time (its session applies them in order), so separate queues cannot reorder one machine's messages.
 */
export const SEPARATE_GROUPS_ON_POSTGRES: readonly ReliableAgentMessage['t'][] = ['meter_receipt'];

/**
 * Applies reliable messages with group commit: messages that arrive while a transaction is running are applied
 * together in the next one, each with its own applied mark, so a burst of telemetry from many machines costs one
 * commit (one fsync on SQLite with synchronous=FULL) instead of one each. When idle, a message is applied alone at
 * once, so batching adds no latency. If a group fails, each of its messages is retried alone, so one failing
 * handler fails only its own message.
 *
 * On Postgres several groups run at once (each on its own pooled connection: statements of one transaction run one
 * after another, so a single lane would serialize every machine's telemetry behind one connection's round trips),
 * and a group costs a fixed number of round trips, not a few per message: its marks are written in two statements
 * (store/channel-state.ts, markMessagesApplied) and its meter receipts charged in five (services/jobs/
 * metering-batch.ts). SQLite has one connection and no round trips: one lane, a mark a message, and the group
 * applied as on Postgres (ChannelHandlers.applyAll: telemetry merged in two upserts, receipts charged together).
 *
 * Under load a lane lingers (`lingerMs`) before taking its group: telemetry from 10,000 agents arrives about every
 * 6 ms, one message at a time, so without the wait every group would hold one message and cost one commit (on SQLite
 * with synchronous=FULL, an fsync of about 2 ms of CPU here; on Postgres, its round trips). It waits only when the
 * previous group committed moments ago (a busy applier): an idle one applies a lone message at once, as before. The
 * wait is a batching delay measured in real time (performance.now and Node's timer), not a decision on the injected
 * clock: a test's manual clock must not stall it, and nothing it decides depends on the time.
 *
 * On Postgres meter receipts have their own queue and lanes (SEPARATE_GROUPS_ON_POSTGRES): see there why. SQLite has one
 * writer, and everything in one commit costs one fsync, so it keeps one queue.
 *
 * The queue is bounded (`maxQueued`, over all queues): past it, apply waits for room, so a session stops reading its socket and its
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
  readonly #lingerMs: number;
  readonly #onGroup: ((queue: string, size: number) => void) | undefined;
  /** The queue of each type applied apart; every other type goes to `#main`. */
  readonly #queueOf = new Map<string, Queue>();
  readonly #main: Queue;
  #queued = 0;
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
    /** How long a busy lane waits to gather its group (ms); 0 (the default) never waits. */
    lingerMs?: number;
    /** Types applied in groups of their own, each with `lanes` lanes (default: SEPARATE_GROUPS_ON_POSTGRES on Postgres). */
    separate?: readonly ReliableAgentMessage['t'][];
    /** Told each group's size as it is taken, with its queue's name ('main' or the type applied apart): for metrics. */
    onGroup?: (queue: string, size: number) => void;
  }) {
    this.#store = options.store;
    this.#handlers = options.handlers;
    this.#clock = options.clock;
    const postgres = options.store.dialect === 'postgres';
    this.#maxBatch = options.maxBatch ?? (postgres ? 256 : 64);
    this.#lanes = options.lanes ?? (postgres ? 2 : 1);
    this.#maxQueued = options.maxQueued ?? 20_000;
    this.#lingerMs = options.lingerMs ?? 0;
    this.#onGroup = options.onGroup;
    this.#main = this.#newQueue('main');
    for (const type of options.separate ?? (postgres ? SEPARATE_GROUPS_ON_POSTGRES : [])) this.#queueOf.set(type, this.#newQueue(type));
  }

  #newQueue(name: string): Queue {
    return { name, pending: [], activeLanes: 0, linger: new BusyLinger(this.#lingerMs) };
  }

  /** Resolves once the message is applied (now, or earlier by another connection); rejects if its handler failed. */
  async apply(machineId: string, msg: ReliableAgentMessage): Promise<void> {
    while (this.#queued >= this.#maxQueued) await new Promise<void>((room) => this.#roomWaiters.push(room));
    const queue = this.#queueOf.get(msg.t) ?? this.#main;
    return new Promise((resolve, reject) => {
      queue.pending.push({ machineId, msg, resolve, reject });
      this.#queued += 1;
      if (queue.activeLanes < this.#lanes) {
        queue.activeLanes += 1;
        this.#activeLanes += 1;
        void this.#lane(queue);
      }
    });
  }

  /** Resolves once nothing is being applied. */
  idle(): Promise<void> {
    if (this.#activeLanes === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async #lane(queue: Queue): Promise<void> {
    try {
      while (queue.pending.length > 0) {
        const wait = queue.linger.beforeBatch(queue.pending.length >= this.#maxBatch);
        if (wait) await wait;
        const batch = queue.pending.splice(0, this.#maxBatch);
        this.#queued -= batch.length;
        this.#onGroup?.(queue.name, batch.length);
        for (const room of this.#roomWaiters.splice(0, batch.length)) room();
        await this.#commit(batch, true);
        queue.linger.batchDone();
      }
    } finally {
      // In the same microtask as the last emptiness check: a job queued after it starts a new lane.
      queue.activeLanes -= 1;
      this.#activeLanes -= 1;
      if (this.#activeLanes === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    }
  }

  async #commit(batch: Job[], retryAlone: boolean): Promise<void> {
    // One lock order for every replica (row locks on Postgres), so two groups never wait on each other in a cycle.
    if (batch.length > 1) batch.sort((a, b) => (a.machineId < b.machineId ? -1 : a.machineId > b.machineId ? 1 : a.msg.id - b.msg.id));
    try {
      const now = this.#clock.now();
      // A deadlock or serialization failure (Postgres) or a busy file (SQLite) rolls the whole group back and is tried
      // again, a few times with a jittered wait: failing it would close the agents' connections over a conflict.
      await inTransactionWithRetry(this.#store, async (trx) => {
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
        // SQLite, or a lone message: each mark is one statement (no round trips to save), and the marked messages
        // are applied as a group (applyAll applies one alone), so telemetry of many machines is two upserts here too.
        const marked: Job[] = [];
        for (const job of batch) if (await markMessageApplied(trx, job.machineId, job.msg.id, now)) marked.push(job);
        await this.#handlers.applyAll(trx, marked, now);
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
