import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { enrollDirect, heartbeatMessage } from '../../testing/hosting.js';
import { DIALECTS } from '../../testing/stores.js';

describe.each(DIALECTS)('heartbeat write-behind on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let owner: SeededAccount;
  let transactions = 0;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 100, heartbeatIntervalMs: 15_000 } });
    owner = await seedAccount(t.ctx);
    // Count write transactions: every heartbeat write, direct or flushed, opens one.
    const db = t.ctx.store.db;
    const transaction = db.transaction.bind(db);
    db.transaction = () => {
      transactions += 1;
      return transaction();
    };
  });
  afterAll(async () => {
    await t.destroy();
  });

  // Through the gateway's handler table: liveness, then reconciliation (which writes nothing without running jobs).
  const beat = (machineId: string, healthy = true, problems: string[] = []) =>
    t.ctx.channel.heartbeat(machineId, heartbeatMessage(healthy, problems), t.clock.now());
  const stored = async (machineId: string) =>
    t.ctx.store.db
      .selectFrom('machines')
      .select(['last_heartbeat_at', 'healthy', 'problems'])
      .where('id', '=', machineId)
      .executeTakeFirstOrThrow();
  const view = async (machineId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${machineId}`, headers: bearer(owner.sessionToken) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  it('writes heartbeats that change nothing in one transaction per flush; the API sees them at once', async () => {
    const buffer = t.ctx.services.hosting.heartbeats;
    const machines: string[] = [];
    for (let i = 0; i < 3; i++) machines.push(await enrollDirect(t.app, owner));
    // First heartbeats go live: applied at once, one transaction each.
    const wentLiveAt = t.clock.now().toISOString();
    transactions = 0;
    for (const id of machines) await beat(id);
    expect(transactions).toBe(machines.length);
    for (const id of machines) expect((await stored(id)).last_heartbeat_at).toBe(wentLiveAt);
    await buffer.flush();

    // Four rounds of plain heartbeats from three machines, 15 s apart: nothing is written when they arrive. The
    // buffer's timer (every second, on the app's clock) writes each round in one transaction a second later.
    transactions = 0;
    let previousAt = wentLiveAt;
    for (let round = 0; round < 4; round++) {
      await t.clock.advance(15_000);
      expect(transactions).toBe(round);
      for (const id of machines) expect((await stored(id)).last_heartbeat_at).toBe(previousAt);
      previousAt = t.clock.now().toISOString();
      for (const id of machines) await beat(id);
    }
    const lastAt = t.clock.now().toISOString();
    expect(transactions).toBe(3);
    for (const id of machines) {
      expect((await stored(id)).last_heartbeat_at).not.toBe(lastAt);
      // Newer than the stored heartbeat: the view consults the buffer.
      expect(await view(id)).toMatchObject({ liveness: 'online', last_heartbeat_at: lastAt });
    }

    // The next tick of the timer: one transaction, the latest heartbeat per machine.
    await t.clock.advance(1_000);
    expect(transactions).toBe(4);
    for (const id of machines) expect((await stored(id)).last_heartbeat_at).toBe(lastAt);
    expect(await buffer.flush()).toBe(0);
    expect(transactions).toBe(4);
  });

  it('applies a heartbeat that changes state at once, and never moves last-seen backwards', async () => {
    const buffer = t.ctx.services.hosting.heartbeats;
    const id = await enrollDirect(t.app, owner);
    await beat(id);
    await t.clock.advance(15_000);
    await beat(id);
    expect(buffer.pendingAt(id)).toBe(t.clock.now().toISOString());

    // Health flips before the buffer's next tick: written now, and the buffered entry is dropped.
    transactions = 0;
    await beat(id, false, ['gpu 0 fell off the bus']);
    expect(transactions).toBe(1);
    expect(buffer.pendingAt(id)).toBeUndefined();
    expect(await stored(id)).toMatchObject({
      last_heartbeat_at: t.clock.now().toISOString(),
      healthy: 0n,
      problems: '["gpu 0 fell off the bus"]',
    });
    expect(await view(id)).toMatchObject({ healthy: false, problems: ['gpu 0 fell off the bus'] });

    // Same problems again: buffered. Problems change: at once.
    await t.clock.advance(15_000);
    await beat(id, false, ['gpu 0 fell off the bus']);
    expect(buffer.pendingAt(id)).toBe(t.clock.now().toISOString());
    await t.clock.advance(15_000);
    await beat(id, false, ['disk full']);
    expect(await stored(id)).toMatchObject({ last_heartbeat_at: t.clock.now().toISOString(), problems: '["disk full"]' });

    // Go-live off and on: the next healthy heartbeat is a transition and is applied at once.
    const goLive = (on: boolean) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/hosts/machines/${id}/go-live`,
        headers: { ...bearer(owner.apiKey), 'idempotency-key': randomUUID() },
        payload: { go_live: on },
      });
    expect((await goLive(false)).json()).toMatchObject({ live: 'off' });
    expect((await goLive(true)).json()).toMatchObject({ live: 'waiting' });
    await t.clock.advance(15_000);
    await beat(id, true);
    expect(await stored(id)).toMatchObject({ last_heartbeat_at: t.clock.now().toISOString(), healthy: 1n });
    expect(await view(id)).toMatchObject({ live: 'live' });

    // A flush of an older buffered timestamp does not overwrite a newer stored one.
    const newest = t.clock.now().toISOString();
    await buffer.add(id, new Date(t.clock.now().getTime() - 5_000), 1n);
    expect(await buffer.flush()).toBe(0);
    expect((await stored(id)).last_heartbeat_at).toBe(newest);
  });
});
