import { randomUUID } from 'node:crypto';
import type { MeterReceiptMessage, TelemetryMessage } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../clock.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { GroupApplier } from './applier.js';
import { markMessagesApplied, openChannelState } from '../store/channel-state.js';
import { ChannelHandlers } from './handlers.js';

const telemetry = (id: number): TelemetryMessage => ({
  v: 1,
  t: 'telemetry',
  sid: 's',
  seq: id + 1,
  id,
  samples: [{ at: '2026-01-01T00:00:00.000Z', devices: [] }],
});

const receipt = (id: number): MeterReceiptMessage => ({
  v: 1,
  t: 'meter_receipt',
  sid: 's',
  seq: id + 1,
  id,
  job_id: randomUUID(),
  fence: '1',
  meter_seq: 1,
  period_start: '2026-01-01T00:00:00.000Z',
  period_end: '2026-01-01T00:00:30.000Z',
  runtime_ms: '30000',
  final: false,
});

describe.each(DIALECTS)('group applier on %s', (dialect) => {
  let store: TestStore;
  let handlers: ChannelHandlers;
  beforeEach(async () => {
    store = await createTestStore(dialect);
    handlers = new ChannelHandlers();
  });
  afterEach(async () => {
    await store.destroy();
  });

  it('applies messages that arrive together in one transaction, each once', async () => {
    const seen: Array<[string, number]> = [];
    const transactions = new Set<unknown>();
    handlers.on('telemetry', async (trx, machineId, msg) => {
      transactions.add(trx);
      seen.push([machineId, msg.id]);
    });
    const applier = new GroupApplier({ store, handlers, clock: systemClock });
    const machines = Array.from({ length: 10 }, () => randomUUID());
    // The first starts a transaction at once (on Postgres, the first two, one per lane); the rest queued behind
    // them share the next ones (groups of at most 64 on SQLite, 256 on Postgres).
    await Promise.all(machines.map((m) => applier.apply(m, telemetry(1))));
    expect(seen).toHaveLength(10);
    expect(transactions.size).toBe(dialect === 'sqlite' ? 2 : 3);
    // Duplicates are acknowledged without running the handler again.
    await Promise.all(machines.map((m) => applier.apply(m, telemetry(1))));
    expect(seen).toHaveLength(10);
    for (const m of machines) expect((await openChannelState(store.db, m)).lastAppliedMsgId).toBe(1);
    await applier.idle();
  });

  it('groups meter receipts apart from other messages on Postgres (their ledger locks), together on SQLite', async () => {
    const typesOf = new Map<unknown, Set<string>>();
    const record = async (trx: unknown, _machineId: string, msg: { t: string }) => {
      typesOf.set(trx, (typesOf.get(trx) ?? new Set()).add(msg.t));
    };
    handlers.on('telemetry', record);
    handlers.on('meter_receipt', record);
    const applier = new GroupApplier({ store, handlers, clock: systemClock, lanes: 1 });
    const machines = Array.from({ length: 12 }, () => randomUUID());
    // The first of each queue starts at once; the rest arrive while it runs and share the next group.
    await Promise.all(machines.map((m, i) => applier.apply(m, i % 2 === 0 ? telemetry(1) : receipt(1))));
    const mixed = [...typesOf.values()].filter((types) => types.size > 1).length;
    if (dialect === 'postgres') expect(mixed).toBe(0);
    else expect(mixed).toBeGreaterThan(0);
    // Both queues apply and mark every message once.
    for (const m of machines) expect((await openChannelState(store.db, m)).lastAppliedMsgId).toBe(1);
    await applier.idle();
  });

  it('tries a group again after a transient conflict (a deadlock), so the message applies once and nobody fails', async () => {
    const calls: number[] = [];
    handlers.on('telemetry', async (_trx, _machineId, msg) => {
      calls.push(msg.id);
      if (calls.length === 1)
        throw Object.assign(new Error('deadlock detected'), { code: dialect === 'postgres' ? '40P01' : 'SQLITE_BUSY' });
    });
    const applier = new GroupApplier({ store, handlers, clock: systemClock });
    const machine = randomUUID();
    await applier.apply(machine, telemetry(1));
    expect(calls).toEqual([1, 1]);
    expect((await openChannelState(store.db, machine)).lastAppliedMsgId).toBe(1);
  });

  it('fails only the message whose handler throws; the rest of its group commits', async () => {
    const bad = randomUUID();
    const good = [randomUUID(), randomUUID(), randomUUID()];
    handlers.on('telemetry', async (_trx, machineId) => {
      if (machineId === bad) throw new Error('handler failed');
    });
    const applier = new GroupApplier({ store, handlers, clock: systemClock });
    const first = applier.apply(randomUUID(), telemetry(1));
    const results = await Promise.allSettled([first, applier.apply(bad, telemetry(1)), ...good.map((m) => applier.apply(m, telemetry(1)))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect((await openChannelState(store.db, bad)).lastAppliedMsgId).toBe(0);
    for (const m of good) expect((await openChannelState(store.db, m)).lastAppliedMsgId).toBe(1);
  });
});

describe('group marks on postgres', () => {
  let store: TestStore;
  beforeEach(async () => {
    store = await createTestStore('postgres');
  });
  afterEach(async () => {
    await store.destroy();
  });

  it('answers for each message what marking it alone, in order, would answer', async () => {
    const [known, fresh] = [randomUUID(), randomUUID()].sort() as [string, string];
    const now = new Date('2026-01-01T00:00:00Z');
    await store.db.transaction().execute((trx) => markMessagesApplied(trx, [{ machineId: known, id: 4 }], now));
    const messages = [
      { machineId: known, id: 3 },
      { machineId: known, id: 4 },
      { machineId: known, id: 5 },
      { machineId: known, id: 7 },
      { machineId: fresh, id: 1 },
      { machineId: fresh, id: 2 },
    ];
    const applied = await store.db.transaction().execute((trx) => markMessagesApplied(trx, messages, now));
    expect(applied).toEqual([false, false, true, true, true, true]);
    expect((await openChannelState(store.db, known)).lastAppliedMsgId).toBe(7);
    expect((await openChannelState(store.db, fresh)).lastAppliedMsgId).toBe(2);
    // The same group again: all applied already.
    expect(await store.db.transaction().execute((trx) => markMessagesApplied(trx, messages, now))).toEqual(messages.map(() => false));
  });
});

describe.each(DIALECTS)('group applier under load on %s', (dialect) => {
  let store: TestStore;
  beforeEach(async () => {
    store = await createTestStore(dialect);
  });
  afterEach(async () => {
    await store.destroy();
  });

  it('lingers while busy, so messages arriving one at a time share commits; a lone message on an idle applier goes at once', async () => {
    const handlers = new ChannelHandlers();
    const transactions: unknown[] = [];
    handlers.on('telemetry', async (trx) => {
      if (transactions.at(-1) !== trx) transactions.push(trx);
    });
    const applier = new GroupApplier({ store, handlers, clock: systemClock, lanes: 1, lingerMs: 40 });
    await applier.apply(randomUUID(), telemetry(1));
    expect(transactions).toHaveLength(1);
    // Busy now: twelve messages 2 ms apart (about 24 ms in all) gather behind the 40 ms wait.
    const applied: Array<Promise<void>> = [];
    for (let i = 0; i < 12; i++) {
      applied.push(applier.apply(randomUUID(), telemetry(1)));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await Promise.all(applied);
    expect(transactions.length).toBeLessThanOrEqual(4);
    expect(transactions.length).toBeGreaterThanOrEqual(2);
  });
});

describe('grouped handlers (ChannelHandlers.applyAll)', () => {
  it('gives the group handler the machines that sent only its type, and applies every other machine alone, in order', async () => {
    const handlers = new ChannelHandlers();
    const calls: string[] = [];
    const single = async (_trx: unknown, machineId: string, msg: { t: string; id: number }) => {
      calls.push(`${msg.t}:${machineId}:${msg.id}`);
    };
    const table = {
      messages: {
        heartbeat: async () => {},
        telemetry: single,
        meter_receipt: single,
        job_status: single,
        job_event: single,
        nettest_receipt: single,
        hardware_receipt: single,
      },
      connected: async () => {},
      disconnected: async () => {},
      groups: {
        telemetry: async (_trx: unknown, list: ReadonlyArray<{ machineId: string; msg: { id: number } }>) => {
          calls.push(`telemetry-group:${list.map((m) => `${m.machineId}:${m.msg.id}`).join(',')}`);
        },
      },
    } as unknown as Parameters<ChannelHandlers['install']>[0];
    handlers.install(table);
    const receipt = (id: number) => ({ ...telemetry(id), t: 'meter_receipt' }) as unknown as TelemetryMessage;
    await handlers.applyAll(
      {} as never,
      [
        { machineId: 'a', msg: telemetry(1) },
        { machineId: 'b', msg: telemetry(1) },
        { machineId: 'c', msg: telemetry(1) },
        { machineId: 'c', msg: receipt(2) },
        { machineId: 'a', msg: telemetry(2) },
      ],
      new Date(),
    );
    expect(calls).toEqual(['telemetry-group:a:1,b:1,a:2', 'telemetry:c:1', 'meter_receipt:c:2']);
    // With a test's spy beside the table's handler, each message goes through both, one by one.
    calls.length = 0;
    handlers.on('telemetry', async (_trx, machineId, msg) => {
      calls.push(`spy:${machineId}:${msg.id}`);
    });
    await handlers.applyAll(
      {} as never,
      [
        { machineId: 'a', msg: telemetry(3) },
        { machineId: 'b', msg: telemetry(3) },
      ],
      new Date(),
    );
    expect(calls).toEqual(['telemetry:a:3', 'spy:a:3', 'telemetry:b:3', 'spy:b:3']);
  });
});
