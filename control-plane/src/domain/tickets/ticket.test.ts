import { describe, expect, it } from 'vitest';
import { decideMessage, mayChangeState, mayRead, partiesToTell, type TicketParties, uuidV7 } from './ticket.js';

const rental: TicketParties = { openerAccountId: 'renter', hostAccountId: 'host', renterAccountId: 'renter', state: 'open' };
const caller = (accountId: string, isAdmin = false) => ({ accountId, isAdmin });

describe('ticket rules', () => {
  it('lets the opener, the rental’s host and an admin write on an open case; anyone else is refused before the state', () => {
    expect(decideMessage(rental, caller('renter'))).toEqual({ ok: true, role: 'opener' });
    expect(decideMessage(rental, caller('host'))).toEqual({ ok: true, role: 'host' });
    expect(decideMessage(rental, caller('ops', true))).toEqual({ ok: true, role: 'admin' });
    expect(decideMessage(rental, caller('someone'))).toEqual({ ok: false, refusal: 'forbidden' });
    const closed = { ...rental, state: 'closed' as const };
    expect(decideMessage(closed, caller('host'))).toEqual({ ok: false, refusal: 'closed' });
    expect(decideMessage(closed, caller('someone'))).toEqual({ ok: false, refusal: 'forbidden' });
  });

  it('closing belongs to the opener and admins; the renter of a host-opened case may read it', () => {
    expect(mayChangeState(rental, caller('renter'))).toBe(true);
    expect(mayChangeState(rental, caller('host'))).toBe(false);
    expect(mayChangeState(rental, caller('ops', true))).toBe(true);
    const byHost: TicketParties = { openerAccountId: 'host', hostAccountId: 'host', renterAccountId: 'renter', state: 'open' };
    expect(mayRead(byHost, caller('renter'))).toBe(true);
    expect(decideMessage(byHost, caller('renter'))).toEqual({ ok: false, refusal: 'forbidden' });
    expect(mayRead(byHost, caller('someone'))).toBe(false);
    expect(partiesToTell(byHost, 'host')).toEqual(['renter']);
    expect(partiesToTell(rental, 'ops').sort()).toEqual(['host', 'renter']);
  });

  it('makes UUIDv7 ids whose order is their time order', () => {
    const a = uuidV7(new Date('2026-01-01T00:00:00.000Z'));
    const b = uuidV7(new Date('2026-01-01T00:00:00.001Z'));
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a < b).toBe(true);
  });
});
