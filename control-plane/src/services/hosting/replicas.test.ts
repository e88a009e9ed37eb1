import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../../testing/stores.js';
import { agentReplicas } from './replicas.js';

// Which replica holds each agent's channel: written by the handshake hook, removed by the disconnect hook of the
// replica that held it, read by the relay on the others. The relay over two real replicas: test/e2e/relay.test.ts.

const now = new Date('2026-01-01T00:00:00.000Z');
const A = 'http://192.0.2.1:8080';
const B = 'http://192.0.2.2:8080';

describe.each(DIALECTS)('agent replicas on %s', (dialect) => {
  let store: TestStore;
  beforeEach(async () => {
    store = await createTestStore(dialect);
  });
  afterEach(async () => {
    await store.destroy();
  });
  const replica = (url: string | null) => agentReplicas({ store, settings: { replicaUrl: url } as never });

  it('tells the other replicas who holds a channel, follows the agent when it moves, and forgets only its own', async () => {
    const machine = randomUUID();
    const [a, b] = [replica(A), replica(B)];
    expect(await b.elsewhere(machine)).toBeNull();
    await a.connected(machine, now);
    expect(await b.elsewhere(machine)).toBe(A);
    // The holder itself is not "elsewhere".
    expect(await a.elsewhere(machine)).toBeNull();
    // The agent reconnects to B before A notices the old connection ended: A's late disconnect leaves B's record.
    await b.connected(machine, now);
    await a.disconnected(machine);
    expect(await a.elsewhere(machine)).toBe(B);
    await b.disconnected(machine);
    expect(await a.elsewhere(machine)).toBeNull();
  });

  it('records nothing for a single replica (no ARK_REPLICA_URL)', async () => {
    const single = replica(null);
    const machine = randomUUID();
    await single.connected(machine, now);
    expect(await single.elsewhere(machine)).toBeNull();
    expect(await store.db.selectFrom('agent_replicas').selectAll().execute()).toEqual([]);
  });
});
