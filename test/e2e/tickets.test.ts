// Support tickets end to end on each store (issue 10, contract parts 2, 3, 4, 7, 8): the real app over HTTP, a real
// rental (a live machine, a funded renter, a reservation) so that the host of a ticket's rental is a party to it.
import { randomUUID } from 'node:crypto';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '@ark/control-plane/testing/app';
import { fund, liveMachine, reserveJob } from '@ark/control-plane/testing/renting';
import { DIALECTS } from '@ark/control-plane/testing/stores';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const USDC = 1_000_000n;

describe.each(DIALECTS)('support tickets on %s', (dialect) => {
  let t: TestApp<any>;
  let renter: SeededAccount;
  let host: SeededAccount;
  let admin: SeededAccount;
  let stranger: SeededAccount;
  let jobId: string;

  const call = (who: SeededAccount, method: 'GET' | 'POST', url: string, payload?: unknown, useSession = false) =>
    t.app.inject({
      method,
      url,
      headers: { ...bearer(useSession ? who.sessionToken : who.apiKey), ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}) },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
  const open = async (who: SeededAccount, body: Record<string, unknown>) => {
    const answer = await call(who, 'POST', '/api/v1/tickets', body);
    expect(answer.statusCode, answer.body).toBe(201);
    return answer.json() as { ticket_id: string; category: string; state: string; job_id: string | null; created_at: string };
  };

  beforeAll(async () => {
    t = await createTestApp(dialect);
    renter = await seedAccount(t.ctx, { role: 'renter' });
    admin = await seedAccount(t.ctx, { role: 'admin' });
    stranger = await seedAccount(t.ctx, { role: 'renter' });
    const machine = await liveMachine(t.ctx, t.app);
    host = machine.host;
    await fund(t.ctx, renter.accountId, 100n * USDC);
    jobId = (await reserveJob(t.app, renter, machine)).jobId;
  }, 120_000);

  afterAll(async () => {
    await t?.destroy();
  });

  it('opens a case about a rental; the opener, the rental’s host and an admin write on it; anyone else is 403', async () => {
    const text = '<script>alert(1)</script> & my job "stopped" \u00e9';
    const ticket = await open(renter, { category: 'rental', text, job_id: jobId });
    expect(ticket).toEqual({
      ticket_id: expect.any(String),
      category: 'rental',
      state: 'open',
      job_id: jobId,
      created_at: expect.any(String),
    });
    expect(ticket.created_at).toMatch(/Z$/);

    for (const [who, session] of [
      [renter, false],
      [host, false],
      [admin, true],
    ] as const) {
      const posted = await call(who, 'POST', `/api/v1/tickets/${ticket.ticket_id}/messages`, { text: `from ${who.email}` }, session);
      expect(posted.statusCode, posted.body).toBe(201);
      expect(posted.body).toBe('');
    }
    const refused = await call(stranger, 'POST', `/api/v1/tickets/${ticket.ticket_id}/messages`, { text: 'let me in' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('TICKET_FORBIDDEN');
    // An admin's API key is not an operator: only an interactive admin session is.
    const adminKey = await call(admin, 'POST', `/api/v1/tickets/${ticket.ticket_id}/messages`, { text: 'by key' });
    expect(adminKey.statusCode).toBe(403);

    // The messages, oldest first, exactly as written (JSON text, never HTML); the host may read, a stranger gets 404.
    const read = await call(host, 'GET', `/api/v1/tickets/${ticket.ticket_id}`);
    expect(read.statusCode).toBe(200);
    expect(read.headers['content-type']).toMatch(/^application\/json/);
    const detail = read.json();
    expect(detail.messages.map((m: any) => [m.author_role, m.text])).toEqual([
      ['opener', text],
      ['opener', `from ${renter.email}`],
      ['host', `from ${host.email}`],
      ['admin', `from ${admin.email}`],
    ]);
    expect((await call(stranger, 'GET', `/api/v1/tickets/${ticket.ticket_id}`)).statusCode).toBe(404);
  });

  it('a closed case answers 409 to a message; only the opener or an admin closes and reopens it', async () => {
    const ticket = await open(renter, { category: 'billing', text: 'charged twice?', job_id: jobId });
    const path = `/api/v1/tickets/${ticket.ticket_id}`;
    expect((await call(host, 'POST', `${path}/close`)).statusCode).toBe(403);
    expect((await call(stranger, 'POST', `${path}/close`)).statusCode).toBe(403);
    const closed = await call(renter, 'POST', `${path}/close`);
    expect(closed.statusCode).toBe(200);
    expect(closed.json().state).toBe('closed');
    for (const [who, session] of [
      [renter, false],
      [host, false],
      [admin, true],
    ] as const) {
      const answer = await call(who, 'POST', `${path}/messages`, { text: 'still there?' }, session);
      expect(answer.statusCode).toBe(409);
      expect(answer.json().error.code).toBe('TICKET_CLOSED');
    }
    // Anyone else is refused before the state is told.
    expect((await call(stranger, 'POST', `${path}/messages`, { text: 'x' })).statusCode).toBe(403);
    const reopened = await call(admin, 'POST', `${path}/reopen`, undefined, true);
    expect(reopened.json().state).toBe('open');
    expect((await call(host, 'POST', `${path}/messages`, { text: 'back' })).statusCode).toBe(201);
    // The admin queue by state.
    const queue = await call(admin, 'GET', '/api/v1/admin/tickets?state=open&limit=100', undefined, true);
    expect(queue.statusCode).toBe(200);
    expect(queue.json().items.map((i: any) => i.ticket_id)).toContain(ticket.ticket_id);
    expect((await call(renter, 'GET', '/api/v1/admin/tickets')).statusCode).toBe(403);
  });

  it('refuses a job that is not the caller’s, empty text and text over the bound; an unknown ticket is 404', async () => {
    const notMine = await call(stranger, 'POST', '/api/v1/tickets', { category: 'rental', text: 'hi', job_id: jobId });
    expect(notMine.statusCode).toBe(404);
    expect((await call(renter, 'POST', '/api/v1/tickets', { category: 'x', text: '' })).statusCode).toBe(422);
    expect((await call(renter, 'POST', '/api/v1/tickets', { category: 'x', text: 'y'.repeat(10_001) })).statusCode).toBe(422);
    expect((await call(renter, 'POST', `/api/v1/tickets/${randomUUID()}/messages`, { text: 'hi' })).statusCode).toBe(404);
    // The host may open a case about the rental too; the renter then is a party (reads it) but not its opener.
    const byHost = await open(host, { category: 'hosting', text: 'the renter mines', job_id: jobId });
    expect((await call(renter, 'GET', `/api/v1/tickets/${byHost.ticket_id}`)).statusCode).toBe(200);
  });

  it('lists only the caller’s own tickets as opener, ordered by id, in cursor pages; an idempotent repeat opens one', async () => {
    const owner = await seedAccount(t.ctx, { role: 'renter' });
    const key = randomUUID();
    const first = await t.app.inject({
      method: 'POST',
      url: '/api/v1/tickets',
      headers: { ...bearer(owner.apiKey), 'idempotency-key': key },
      payload: { category: 'account', text: 'one' },
    });
    const repeat = await t.app.inject({
      method: 'POST',
      url: '/api/v1/tickets',
      headers: { ...bearer(owner.apiKey), 'idempotency-key': key },
      payload: { category: 'account', text: 'one' },
    });
    expect(repeat.statusCode).toBe(201);
    expect(repeat.json()).toEqual(first.json());
    const opened = [first.json().ticket_id as string];
    for (let i = 0; i < 6; i++) {
      await t.clock.advance(1);
      opened.push((await open(owner, { category: 'account', text: `t${i}` })).ticket_id);
    }
    await open(stranger, { category: 'account', text: 'not in the list' });

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const answer = await call(owner, 'GET', `/api/v1/tickets?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(answer.statusCode).toBe(200);
      const page = answer.json() as { items: any[]; next_cursor: string | null };
      for (const item of page.items) expect(Object.keys(item).sort()).toEqual(['category', 'created_at', 'job_id', 'state', 'ticket_id']);
      seen.push(...page.items.map((i) => i.ticket_id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual([...opened].sort());
    // Ids are time-ordered: the list is the creation order.
    expect(seen).toEqual(opened);
    const forged = await call(owner, 'GET', '/api/v1/tickets?cursor=abc.def');
    expect(forged.statusCode).toBe(422);
  });
});
