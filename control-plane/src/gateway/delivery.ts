import type { Client as PgClient } from 'pg';
import type { Clock, ClockTimer } from '../clock.js';
import type { PostgresConnector, Store } from '../store/db.js';
import type { GatewayLogger } from './logger.js';
import { machinesWithPendingCommands, OUTBOX_NOTIFY_CHANNEL, outboxWakeups } from '../store/outbox.js';

export interface OutboxWatchOptions {
  store: Store;
  /** The poll's and the LISTEN reconnect's timers. */
  clock: Clock;
  /**
   * Opens the dedicated LISTEN connection (a new one after each loss; runtime.ts builds it); null on SQLite (one
   * process: in-process wake-ups suffice).
   */
  listenConnector: PostgresConnector | null;
  /** The safety net: how often pending commands are scanned even without a wake-up. */
  pollIntervalMs: number;
  logger: GatewayLogger;
  /** A machine's outbox may have grown: deliver if its socket is held here. */
  wake(machineId: string): void;
  /** The poll found a machine with pending commands up to `maxSeq`. */
  pending(machineId: string, maxSeq: number): void;
  /** Whether any socket is held here (no socket, no poll). */
  holdsSockets(): boolean;
}

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 30_000;

/**
 * Wakes the gateway when commands are queued: in-process events for this replica, Postgres LISTEN/NOTIFY for
 * commands queued by other replicas (NOTIFY is sent at commit), and a periodic scan that catches anything a lost
 * notification missed (a LISTEN connection that dropped and is reconnecting).
 */
export class OutboxWatch {
  readonly #options: OutboxWatchOptions;
  #client: PgClient | null = null;
  #pollTimer: ClockTimer | null = null;
  #reconnectTimer: ClockTimer | null = null;
  #reconnectDelayMs = RECONNECT_MIN_MS;
  #polling = false;
  #closed = false;
  readonly #onLocal = (machineId: string) => this.#options.wake(machineId);

  constructor(options: OutboxWatchOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    outboxWakeups.on('enqueued', this.#onLocal);
    this.#pollTimer = this.#options.clock.setInterval(() => this.poll(), this.#options.pollIntervalMs);
    this.#pollTimer.unref();
    if (this.#options.listenConnector) await this.#listen(this.#options.listenConnector);
  }

  /** Scans pending commands once (also what the timer runs). */
  async poll(): Promise<void> {
    if (this.#polling || this.#closed || !this.#options.holdsSockets()) return;
    this.#polling = true;
    try {
      for (const { machineId, maxSeq } of await machinesWithPendingCommands(this.#options.store.db))
        this.#options.pending(machineId, maxSeq);
    } catch (error) {
      this.#options.logger.warn({ err: error }, 'agent outbox poll failed');
    } finally {
      this.#polling = false;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    outboxWakeups.off('enqueued', this.#onLocal);
    this.#options.clock.clearInterval(this.#pollTimer);
    this.#options.clock.clearTimeout(this.#reconnectTimer);
    const client = this.#client;
    this.#client = null;
    if (client) await client.end().catch(() => {});
  }

  async #listen(connect: PostgresConnector): Promise<void> {
    const client = connect();
    const lost = (error?: unknown) => {
      if (this.#client !== client) return;
      this.#client = null;
      client.end().catch(() => {});
      if (this.#closed) return;
      this.#options.logger.warn({ err: error }, 'agent outbox LISTEN connection lost; polling until it is back');
      this.#scheduleReconnect(connect);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      if (message.channel === OUTBOX_NOTIFY_CHANNEL && message.payload) this.#options.wake(message.payload);
    });
    this.#client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${OUTBOX_NOTIFY_CHANNEL}`);
      this.#reconnectDelayMs = RECONNECT_MIN_MS;
      // Whatever was queued while we were not listening.
      void this.poll();
    } catch (error) {
      lost(error);
    }
  }

  #scheduleReconnect(connect: PostgresConnector): void {
    const delay = this.#reconnectDelayMs * (0.5 + Math.random() * 0.5);
    this.#reconnectDelayMs = Math.min(this.#reconnectDelayMs * 2, RECONNECT_MAX_MS);
    this.#reconnectTimer = this.#options.clock.setTimeout(() => {
      this.#reconnectTimer = null;
      if (!this.#closed) return this.#listen(connect);
    }, delay);
    this.#reconnectTimer.unref();
  }
}
