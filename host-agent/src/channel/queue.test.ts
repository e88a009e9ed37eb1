import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COMMANDS_FILE, PersistentQueue, QUEUE_FILE, QueueFullError, type ReliableBody } from './queue.js';

const telemetry = (n: number): ReliableBody => ({
  t: 'telemetry',
  samples: [{ at: '2026-01-01T00:00:00.000Z', devices: [], host: { load1: n } }],
});
const receipt = (n: number): ReliableBody => ({
  t: 'meter_receipt',
  job_id: randomUUID(),
  fence: '1',
  meter_seq: n,
  period_start: '2026-01-01T00:00:00.000Z',
  period_end: '2026-01-01T00:01:00.000Z',
  runtime_ms: '60000',
  final: false,
});

describe('PersistentQueue', () => {
  let stateDir: string;
  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'ark-queue-'));
  });
  afterEach(() => {
    rmSync(stateDir, { recursive: true, force: true });
  });

  const open = (maxEntries?: number) => PersistentQueue.open({ stateDir, maxEntries });
  const lines = () => readFileSync(join(stateDir, QUEUE_FILE), 'utf8').trim().split('\n');

  it('queues only the catalog’s reliable types: anything else would never be acknowledged', async () => {
    const queue = await open();
    const heartbeat = { t: 'heartbeat', at: '2026-01-01T00:00:00.000Z', uptime_s: 1, healthy: true, problems: [], running_jobs: [] };
    await expect(queue.append(heartbeat as unknown as ReliableBody)).rejects.toThrow('not a reliable agent message type: heartbeat');
    await expect(queue.append({ t: 'self_test' } as unknown as ReliableBody)).rejects.toThrow('not a reliable agent message type');
    expect((await queue.append(telemetry(1))).id).toBe(1);
    expect(queue.entries.map((m) => m.body.t)).toEqual(['telemetry']);
    await queue.close();
  });

  it('assigns ids from 1, keeps them on disk owner-only, and continues after a reopen', async () => {
    const queue = await open();
    expect((await queue.append(telemetry(1))).id).toBe(1);
    expect((await queue.append(receipt(1))).id).toBe(2);
    expect(statSync(join(stateDir, QUEUE_FILE)).mode & 0o777).toBe(0o600);
    await queue.close();
    const again = await open();
    expect(again.entries.map((e) => [e.id, e.body.t])).toEqual([
      [1, 'telemetry'],
      [2, 'meter_receipt'],
    ]);
    expect((await again.append(telemetry(2))).id).toBe(3);
    await again.close();
  });

  it('forgets acknowledged messages, also across a reopen, without reusing their ids', async () => {
    const queue = await open();
    for (let n = 1; n <= 4; n++) await queue.append(telemetry(n));
    expect(queue.acknowledge(2)).toBe(2);
    expect(queue.acknowledge(1)).toBe(0);
    expect(queue.entries.map((e) => e.id)).toEqual([3, 4]);
    await queue.close();
    const again = await open();
    expect(again.entries.map((e) => e.id)).toEqual([3, 4]);
    again.acknowledge(4);
    await again.close();
    const empty = await open();
    expect(empty.size).toBe(0);
    expect(empty.ackedUpto).toBe(4);
    expect((await empty.append(telemetry(5))).id).toBe(5);
    await empty.close();
  });

  it('drops the oldest telemetry first when full, and never a receipt', async () => {
    const queue = await open(3);
    await queue.append(receipt(1));
    await queue.append(telemetry(1));
    await queue.append(telemetry(2));
    await queue.append(receipt(2));
    expect(queue.entries.map((e) => [e.id, e.body.t])).toEqual([
      [1, 'meter_receipt'],
      [3, 'telemetry'],
      [4, 'meter_receipt'],
    ]);
    expect(queue.droppedTelemetry).toBe(1);
    // Full again: the remaining telemetry batch goes.
    await queue.append(receipt(3));
    expect(queue.entries.map((e) => e.id)).toEqual([1, 4, 5]);
    expect(queue.droppedTelemetry).toBe(2);
    // Only receipts left: they overrun the bound, up to twice it; telemetry is refused.
    await expect(queue.append(telemetry(3))).rejects.toBeInstanceOf(QueueFullError);
    for (let n = 4; n <= 6; n++) await queue.append(receipt(n));
    await expect(queue.append(receipt(7))).rejects.toBeInstanceOf(QueueFullError);
    await queue.close();
    const again = await open(3);
    expect(again.entries.map((e) => e.id)).toEqual([1, 4, 5, 6, 7, 8]);
    expect(new Set(again.entries.map((e) => e.body.t))).toEqual(new Set(['meter_receipt']));
    await again.close();
  });

  it('ignores a torn last line (a crash mid-append, before the message could be sent)', async () => {
    const queue = await open();
    await queue.append(telemetry(1));
    await queue.close();
    appendFileSync(join(stateDir, QUEUE_FILE), '{"m":{"id":2,"bo');
    const again = await open();
    expect(again.entries.map((e) => e.id)).toEqual([1]);
    expect((await again.append(telemetry(2))).id).toBe(2);
    await again.close();
  });

  it('rewrites the log when it is mostly acknowledged lines', async () => {
    const queue = await open();
    for (let n = 1; n <= 1_100; n++) {
      await queue.append(telemetry(n));
      queue.acknowledge(n);
    }
    await queue.append(telemetry(0));
    await queue.close();
    expect(lines().length).toBeLessThan(1_100);
    const again = await open();
    expect(again.entries.map((e) => e.id)).toEqual([1_101]);
    expect(lines()).toHaveLength(2);
    await again.close();
  });

  it('renumbers after ids the control plane already applied', async () => {
    const queue = await open();
    await queue.append(telemetry(1));
    await queue.append(telemetry(2));
    expect(await queue.rebase(1)).toBe(false);
    expect(await queue.rebase(10)).toBe(true);
    expect(queue.entries.map((e) => e.id)).toEqual([11, 12]);
    await queue.close();
    const again = await open();
    expect(again.entries.map((e) => e.id)).toEqual([11, 12]);
    expect(again.nextId).toBe(13);
    await again.close();
  });

  it('keeps the applied command counter durably', async () => {
    const queue = await open();
    await queue.setCommandsApplied(3);
    await queue.setCommandsApplied(2);
    await queue.close();
    expect(JSON.parse(readFileSync(join(stateDir, COMMANDS_FILE), 'utf8'))).toEqual({ commands_applied_upto: 3 });
    expect((await open()).commandsAppliedUpto).toBe(3);
  });
});
