import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestApp } from '../testing/app.js';
import { liveMachine } from '../testing/renting.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import {
  claimSelftest,
  findMachineVerification,
  insertHardwareReceipt,
  insertMachineVerification,
  isHardwareUnlisted,
  latestHardwareReceipts,
  lockMachineVerification,
  machinesDueSelftest,
  writeMachineVerification,
} from './hardware-receipts.js';
import * as migration from './migrations/0023-hardware-receipts.js';

// The hardware receipts store on each dialect: receipts unique per (machine, seq) and kept byte for byte, the standing
// row written whole, and the self-test claim that only one replica wins.

const t0 = new Date('2026-11-27T20:00:00.000Z');
const later = (ms: number) => new Date(t0.getTime() + ms);

describe.each(DIALECTS)('hardware receipts store on %s', (dialect) => {
  let store: TestStore;
  beforeEach(async () => {
    store = await createTestStore(dialect);
  });
  afterEach(async () => {
    await store.destroy();
  });

  const receipt = (machineId: string, receiptSeq: number, text: string) => ({
    machineId,
    receiptSeq,
    receipt: text,
    signature: `${'A'.repeat(86)}==`,
    trigger: 'daily',
    ok: true,
    score: receiptSeq === 2 ? 154.9 : null,
    measuredAt: later(receiptSeq).toISOString(),
    now: later(receiptSeq),
  });

  it('keeps receipts exactly as given, newest first, and refuses a second receipt with the same seq', async () => {
    const machine = randomUUID();
    // Text with characters a careless driver would normalise: stored and read back byte for byte.
    const texts = ['{"a":"é\\u2028"}', '{"b":1.50}', '{"c":"\\\\"}'];
    await store.db.transaction().execute(async (trx) => {
      for (const [i, text] of texts.entries()) await insertHardwareReceipt(trx, receipt(machine, i + 1, text));
    });
    const rows = await latestHardwareReceipts(store.db, machine, 2);
    expect(rows.map((r) => [Number(r.receipt_seq), r.receipt, r.score])).toEqual([
      [3, texts[2], null],
      [2, texts[1], 154.9],
    ]);
    await expect(store.db.transaction().execute((trx) => insertHardwareReceipt(trx, receipt(machine, 2, '{}')))).rejects.toThrow();
    expect(await latestHardwareReceipts(store.db, randomUUID(), 10)).toEqual([]);
  });

  it('writes the standing whole and reads the unlisting back', async () => {
    const machine = randomUUID();
    await insertMachineVerification(store.db, { machineId: machine, ownerAccountId: 'host', nextSelftestAt: t0, now: t0 });
    // A second insert (a receipt racing enrollment's row) changes nothing.
    await insertMachineVerification(store.db, { machineId: machine, ownerAccountId: 'other', nextSelftestAt: later(5), now: t0 });
    expect(await isHardwareUnlisted(store.db, machine)).toBe(false);
    await store.db.transaction().execute(async (trx) => {
      const standing = await lockMachineVerification(trx, machine);
      expect(standing).toMatchObject({ ownerAccountId: 'host', lastReceiptSeq: 0, score: null, unlisted: false, contradictions: [] });
      await writeMachineVerification(
        trx,
        {
          ...standing!,
          lastReceiptSeq: 7,
          score: 154.9,
          verifiedAt: t0.toISOString(),
          unlisted: true,
          contradictions: [{ code: 'fewer_gpus', message: 'The machine declares 2 GPU(s) but the self-test found 1.' }],
          unlistedSince: t0.toISOString(),
          ticketId: 'ticket-1',
        },
        t0,
      );
    });
    expect(await findMachineVerification(store.db, machine)).toEqual({
      machineId: machine,
      ownerAccountId: 'host',
      lastReceiptSeq: 7,
      score: 154.9,
      verifiedAt: t0.toISOString(),
      unlisted: true,
      contradictions: [{ code: 'fewer_gpus', message: 'The machine declares 2 GPU(s) but the self-test found 1.' }],
      unlistedSince: t0.toISOString(),
      ticketId: 'ticket-1',
      nextSelftestAt: t0.toISOString(),
    });
    expect(await isHardwareUnlisted(store.db, machine)).toBe(true);
  });

  it('gives machines enrolled before the migration a standing row with a self-test due at once', async () => {
    // A machine enrolled the real way (accounts, token, offer), then the migration again over a store that has it.
    const app = await createTestApp(dialect);
    try {
      const machine = await liveMachine(app.ctx, app.app);
      await migration.down(app.store.db);
      await migration.up(app.store.db);
      const row = await app.store.db
        .selectFrom('machines')
        .select(['owner_account_id', 'created_at'])
        .where('id', '=', machine.machineId)
        .executeTakeFirstOrThrow();
      expect(await findMachineVerification(app.store.db, machine.machineId)).toMatchObject({
        ownerAccountId: row.owner_account_id,
        lastReceiptSeq: 0,
        score: null,
        unlisted: false,
        contradictions: [],
        nextSelftestAt: row.created_at,
      });
      expect((await machinesDueSelftest(app.store.db, new Date(row.created_at), 10)).map((d) => d.machineId)).toEqual([machine.machineId]);
    } finally {
      await app.destroy();
    }
  });

  it('lists machines whose self-test is due, soonest first, and lets one claim win per due time', async () => {
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await insertMachineVerification(store.db, { machineId: a, ownerAccountId: 'h', nextSelftestAt: later(2000), now: t0 });
    await insertMachineVerification(store.db, { machineId: b, ownerAccountId: 'h', nextSelftestAt: later(1000), now: t0 });
    await insertMachineVerification(store.db, { machineId: c, ownerAccountId: 'h', nextSelftestAt: later(9000), now: t0 });
    const due = await machinesDueSelftest(store.db, later(5000), 10);
    expect(due.map((d) => d.machineId)).toEqual([b, a]);
    const first = due[0]!;
    const claims = await Promise.all(
      [0, 1].map(() => store.db.transaction().execute((trx) => claimSelftest(trx, first.machineId, first.dueAt, later(86_400_000)))),
    );
    expect(claims.sort()).toEqual([false, true]);
    expect((await machinesDueSelftest(store.db, later(5000), 10)).map((d) => d.machineId)).toEqual([a]);
  });
});
