import { NettestReceiptMessage, type RunNettestBody } from '@ark/shared/channel/messages';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { registerFormats } from '../formats.js';
import type { NettestMeasurement } from './measure.js';
import { NETTEST_PENDING_MAX, type NettestReceiptBody, NettestRunner } from './runner.js';

const body: RunNettestBody = { endpoint: 'http://127.0.0.1:1/nettest', timeout_ms: 5000, download_bytes: 1000, upload_bytes: 1000 };
const logger = { info: () => {}, warn: () => {} };
const commandId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('NettestRunner', () => {
  it('answers each test with one schema-valid receipt carrying its command id', async () => {
    registerFormats();
    const receipts: NettestReceiptBody[] = [];
    const runner = new NettestRunner({
      bounds: { maxDownloadBytes: 1, maxUploadBytes: 1, pingCount: 1 },
      now: () => new Date('2025-01-01T00:00:00.000Z'),
      enqueue: (receipt) => void receipts.push(receipt),
      logger,
      measure: async () => ({ duration_ms: 1234, latency_ms: 0.5, download_mbps: 940.12, upload_mbps: 870 }),
    });
    runner.submit(commandId(1), body);
    await runner.idle();
    expect(receipts).toEqual([
      {
        t: 'nettest_receipt',
        command_id: commandId(1),
        measured_at: '2025-01-01T00:00:00.000Z',
        duration_ms: 1234,
        latency_ms: 0.5,
        download_mbps: 940.12,
        upload_mbps: 870,
      },
    ]);
    expect([...Value.Errors(NettestReceiptMessage, { v: 1, sid: 's', seq: 1, id: 1, ...receipts[0] })]).toEqual([]);
    expect(runner.lastReceipt()?.command_id).toBe(commandId(1));
  });

  it('runs tests one at a time and refuses a backlog beyond its bound', async () => {
    const receipts: NettestReceiptBody[] = [];
    let running = 0;
    let maxRunning = 0;
    const releases: Array<() => void> = [];
    const runner = new NettestRunner({
      bounds: { maxDownloadBytes: 1, maxUploadBytes: 1, pingCount: 1 },
      now: () => new Date(),
      enqueue: (receipt) => void receipts.push(receipt),
      logger,
      measure: () =>
        new Promise<NettestMeasurement>((resolve) => {
          running += 1;
          maxRunning = Math.max(maxRunning, running);
          releases.push(() => {
            running -= 1;
            resolve({ duration_ms: 1 });
          });
        }),
    });
    for (let i = 1; i <= NETTEST_PENDING_MAX + 2; i += 1) runner.submit(commandId(i), body);
    // The one over the bound is answered at once.
    await Promise.resolve();
    expect(receipts.map((receipt) => [receipt.command_id, receipt.error])).toEqual([
      [commandId(NETTEST_PENDING_MAX + 2), 'too many network tests waiting on this machine'],
    ]);
    while (receipts.length < NETTEST_PENDING_MAX + 2) {
      await new Promise((resolve) => setImmediate(resolve));
      releases.shift()?.();
    }
    await runner.idle();
    expect(maxRunning).toBe(1);
    expect(receipts.slice(1).map((receipt) => receipt.command_id)).toEqual([1, 2, 3, 4, 5].map(commandId));
  });

  it('turns a measurement that throws into an error receipt', async () => {
    const receipts: NettestReceiptBody[] = [];
    const runner = new NettestRunner({
      bounds: { maxDownloadBytes: 1, maxUploadBytes: 1, pingCount: 1 },
      now: () => new Date(),
      enqueue: (receipt) => void receipts.push(receipt),
      logger,
      measure: async () => Promise.reject(new Error('boom')),
    });
    runner.submit(commandId(1), body);
    await runner.idle();
    expect(receipts[0]).toMatchObject({ command_id: commandId(1), duration_ms: 0, error: 'measurement failed: Error: boom' });
  });
});
