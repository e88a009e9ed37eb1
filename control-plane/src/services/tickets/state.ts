import type { TicketState } from '@ark/shared';
import { mayChangeState, type TicketCaller } from '../../domain/tickets/ticket.js';
import { DomainError } from '../../errors.js';
import { setTicketState, type TicketRow } from '../../store/tickets.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { TicketDeps } from './deps.js';
import { lockedTicket } from './reads.js';

/** Closes or reopens a case: its opener or an admin (TICKET_FORBIDDEN otherwise). Setting the state it has is a no-op. */
export function setTicketStateAs(
  deps: TicketDeps,
  input: { ticketId: string; caller: TicketCaller; state: TicketState },
  commit?: CommitHook<TicketRow>,
): Promise<TicketRow> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const { ticket, parties } = await lockedTicket(trx, input.ticketId);
      if (!mayChangeState(parties, input.caller)) throw new DomainError('TICKET_FORBIDDEN');
      if (ticket.state === input.state) return ticket;
      await setTicketState(trx, ticket.id, input.state, now);
      return { ...ticket, state: input.state, closed_at: input.state === 'closed' ? now.toISOString() : null };
    },
    commit,
  );
}
