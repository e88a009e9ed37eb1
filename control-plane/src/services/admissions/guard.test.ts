import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import { DomainError } from '../../errors.js';
import { insertAccount } from '../../store/accounts.js';
import { findAcceptanceAuthorization, readAdmissionState } from '../../store/admissions.js';
import { createTestStore, DIALECTS, type TestStore } from '../../testing/stores.js';
import type { AdmissionRequest } from './guard.js';
import { type AdmissionServices, buildAdmissionServices } from './index.js';

const now = new Date('2026-05-01T10:00:00.000Z');

describe.each(DIALECTS)('the paid-admission guard on %s', (dialect) => {
  let store: TestStore;
  let clock: ManualClock;
  let admissions: AdmissionServices;
  let released = 0;
  const ids = { admin: '', renter: '', other: '' };

  beforeAll(async () => {
    store = await createTestStore(dialect);
    clock = new ManualClock(now);
    admissions = buildAdmissionServices({
      store,
      clock,
      releaseHeldDeposits: async () => {
        released++;
        return 0;
      },
    });
    const seed = async (role: 'admin' | 'renter') =>
      (
        await insertAccount(store.db, {
          email: `${role}-${randomUUID()}@example.test`,
          passwordHash: null,
          name: null,
          role,
          emailVerified: true,
          now,
        })
      ).id;
    ids.admin = await seed('admin');
    ids.renter = await seed('renter');
    ids.other = await seed('renter');
  });
  afterAll(async () => {
    await store.destroy();
  });

  const admit = (request: AdmissionRequest) => store.db.transaction().execute((trx) => admissions.guard.admit(trx, request));
  const refusal = async (request: AdmissionRequest) => {
    const error = await admit(request).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DomainError);
    return { code: (error as DomainError).code, message: (error as DomainError).message };
  };
  const issue = (kind: 'reservation' | 'funding_credit', accountId = ids.renter, lifetimeMs = 600_000) =>
    admissions.issueAuthorization({
      adminAccountId: ids.admin,
      accountId,
      kind,
      expiresAt: new Date(clock.now().getTime() + lifetimeMs),
      reason: 'test',
    });

  it('admits everything while open and spends no authorization', async () => {
    const pass = await issue('reservation');
    expect(await admit({ accountId: ids.renter, kind: 'reservation', authorization: pass.id })).toEqual({ via: 'open' });
    expect((await findAcceptanceAuthorization(store.db, pass.id))?.consumed_at).toBeNull();
  });

  it('paused: refuses without an authorization, and lets a valid one through exactly once', async () => {
    await admissions.set({ adminAccountId: ids.admin, enabled: false, reason: 'drill' });
    expect((await readAdmissionState(store.db)).enabled).toBe(false);
    expect(await refusal({ accountId: ids.renter, kind: 'reservation' })).toMatchObject({ code: 'ADMISSIONS_PAUSED' });
    const pass = await issue('reservation');
    expect(await refusal({ accountId: ids.other, kind: 'reservation', authorization: pass.id })).toEqual({
      code: 'ACCEPTANCE_AUTHORIZATION_INVALID',
      message: 'The acceptance authorization is unknown.',
    });
    expect((await refusal({ accountId: ids.renter, kind: 'payout', authorization: pass.id })).message).toContain('another kind');
    expect(await refusal({ accountId: ids.renter, kind: 'reservation', authorization: randomUUID() })).toMatchObject({
      code: 'ACCEPTANCE_AUTHORIZATION_INVALID',
    });
    expect(await admit({ accountId: ids.renter, kind: 'reservation', authorization: pass.id, reference: 'job:1' })).toEqual({
      via: 'authorization',
      authorizationId: pass.id,
    });
    expect(await findAcceptanceAuthorization(store.db, pass.id)).toMatchObject({
      consumed_at: now.toISOString(),
      consumed_reference: 'job:1',
    });
    expect((await refusal({ accountId: ids.renter, kind: 'reservation', authorization: pass.id })).message).toContain('already used');
  });

  it('an operation that rolls back leaves its authorization unspent; an expired one is refused', async () => {
    const pass = await issue('reservation');
    await expect(
      store.db.transaction().execute(async (trx) => {
        await admissions.guard.admit(trx, { accountId: ids.renter, kind: 'reservation', authorization: pass.id });
        throw new DomainError('INSUFFICIENT_BALANCE');
      }),
    ).rejects.toThrow(DomainError);
    expect((await findAcceptanceAuthorization(store.db, pass.id))?.consumed_at).toBeNull();
    await clock.advance(600_000);
    expect((await refusal({ accountId: ids.renter, kind: 'reservation', authorization: pass.id })).message).toContain('expired');
  });

  it('a funding credit (no client) takes the oldest unspent authorization of its account, or waits', async () => {
    const credit = { accountId: ids.renter, kind: 'funding_credit' as const, anyOfAccount: true };
    const tryAdmit = () => store.db.transaction().execute((trx) => admissions.guard.tryAdmit(trx, credit));
    expect(await tryAdmit()).toBeNull();
    const first = await issue('funding_credit');
    await clock.advance(1_000);
    await issue('funding_credit');
    expect(await tryAdmit()).toEqual({ via: 'authorization', authorizationId: first.id });
    expect((await tryAdmit())?.via).toBe('authorization');
    expect(await tryAdmit()).toBeNull();
  });

  it('an expiry outside 1 minute .. 7 days, or an unknown account, is refused; a resume releases held deposits', async () => {
    await expect(issue('reservation', ids.renter, 30_000)).rejects.toThrow('at least 60 s');
    await expect(issue('reservation', ids.renter, 8 * 86_400_000)).rejects.toThrow('7 days');
    await expect(issue('reservation', randomUUID())).rejects.toThrow('No account');
    const before = released;
    const state = await admissions.set({ adminAccountId: ids.admin, enabled: true, reason: 'drill over' });
    expect(state).toMatchObject({ enabled: true, reason: 'drill over', changedBy: ids.admin });
    expect(released).toBe(before + 1);
    expect((await admissions.status()).heldDeposits).toBe(0n);
  });
});
