import type { RunNettestBody } from '@ark/shared';
import { type MeasureOptions, type NettestBounds, type NettestMeasurement, measureNetwork } from './measure.js';

export type NettestReceiptBody = {
  t: 'nettest_receipt';
  command_id: string;
  measured_at: string;
  duration_ms: number;
  download_mbps?: number;
  upload_mbps?: number;
  latency_ms?: number;
  error?: string;
};

export interface NettestRunnerOptions {
  bounds: NettestBounds;
  now: () => Date;
  /** Hands the receipt to the channel's reliable queue. */
  enqueue: (body: NettestReceiptBody) => Promise<unknown> | unknown;
  logger: { info(detail: Record<string, unknown>, message: string): void; warn(detail: Record<string, unknown>, message: string): void };
  measure?: (command: RunNettestBody, options: MeasureOptions) => Promise<NettestMeasurement>;
  /** Called after each receipt is queued (the agent refreshes its status report). */
  onReceipt?: () => void;
}

/** Tests waiting beyond the one running; more than this are answered at once with an error receipt. */
export const NETTEST_PENDING_MAX = 4;

/**
 * Runs network tests one at a time, in the background, so a 30-second measurement never holds up the
 * commands behind it; each ends in exactly one receipt.
 */
export class NettestRunner {
  readonly #options: NettestRunnerOptions;
  #tail: Promise<void> = Promise.resolve();
  #pending = 0;
  #last: (NettestReceiptBody & { finished_at: string }) | undefined;

  constructor(options: NettestRunnerOptions) {
    this.#options = options;
  }

  lastReceipt(): (NettestReceiptBody & { finished_at: string }) | undefined {
    return this.#last;
  }

  /** Resolves when everything accepted so far has been measured and its receipt queued. */
  idle(): Promise<void> {
    return this.#tail;
  }

  /** Accepts a test and returns at once; the receipt follows when it has run. */
  submit(commandId: string, body: RunNettestBody): void {
    if (this.#pending > NETTEST_PENDING_MAX) {
      void this.#answer(commandId, this.#options.now(), { duration_ms: 0, error: 'too many network tests waiting on this machine' });
      return;
    }
    this.#pending += 1;
    this.#tail = this.#tail.then(async () => {
      try {
        const measuredAt = this.#options.now();
        const measure = this.#options.measure ?? measureNetwork;
        let measurement: NettestMeasurement;
        try {
          measurement = await measure(body, { bounds: this.#options.bounds });
        } catch (error) {
          measurement = { duration_ms: 0, error: `measurement failed: ${String(error)}`.slice(0, 500) };
        }
        await this.#answer(commandId, measuredAt, measurement);
      } finally {
        this.#pending -= 1;
      }
    });
  }

  async #answer(commandId: string, measuredAt: Date, measurement: NettestMeasurement): Promise<void> {
    const receipt: NettestReceiptBody = {
      t: 'nettest_receipt',
      command_id: commandId,
      measured_at: measuredAt.toISOString(),
      ...measurement,
    };
    this.#last = { ...receipt, finished_at: this.#options.now().toISOString() };
    try {
      await this.#options.enqueue(receipt);
      this.#options.logger.info({ ...measurement, command_id: commandId }, 'network test measured');
    } catch (error) {
      this.#options.logger.warn({ command_id: commandId, error: String(error) }, 'network test receipt not queued');
    }
    this.#options.onReceipt?.();
  }
}
