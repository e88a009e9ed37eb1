import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAccount } from '../store/accounts.js';
import { isHostingBlocked } from '../store/hosts.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { CliRefusal } from './context.js';
import { setHostingBlockCommand } from './hosts.js';
import { type TestCliContext, testCliContext } from './testing.js';

const now = new Date('2026-04-01T08:00:00.000Z');

describe.each(DIALECTS)('hosts block on %s', (dialect) => {
  let store: TestStore;
  let cli: TestCliContext;
  beforeAll(async () => {
    store = await createTestStore(dialect);
    cli = testCliContext(store, now);
  });
  afterAll(async () => {
    await cli.close();
    await store.destroy();
  });

  it('blocks and unblocks an account, audited with the reason', async () => {
    const email = `host-${randomUUID()}@example.test`;
    const account = await insertAccount(store.db, { email, passwordHash: null, name: null, role: 'host', emailVerified: true, now });
    const blocked = await setHostingBlockCommand(cli, { email: ` ${email.toUpperCase()} `, blocked: true, reason: 'chargeback fraud' });
    expect(blocked).toEqual({ account_id: account.id, email, hosting_blocked: true, host_enabled: true });
    expect(await isHostingBlocked(store.db, account.id)).toBe(true);
    await setHostingBlockCommand(cli, { email, blocked: false, reason: 'cleared by review' });
    expect(await isHostingBlocked(store.db, account.id)).toBe(false);
    const audit = await store.db
      .selectFrom('audit_log')
      .select(['action', 'detail'])
      .where('subject', '=', account.id)
      .orderBy('at')
      .execute();
    expect(audit.map((a) => [a.action, JSON.parse(a.detail).reason])).toEqual([
      ['hosting.blocked_by_operator', 'chargeback fraud'],
      ['hosting.unblocked_by_operator', 'cleared by review'],
    ]);
  });

  it('refuses an unknown email or a missing reason', async () => {
    await expect(setHostingBlockCommand(cli, { email: 'nobody@example.test', blocked: true, reason: 'abuse report' })).rejects.toThrow(
      CliRefusal,
    );
    await expect(setHostingBlockCommand(cli, { email: 'nobody@example.test', blocked: true, reason: ' ' })).rejects.toThrow('--reason');
  });
});
