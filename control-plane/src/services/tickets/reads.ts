import { TICKET_MESSAGES_MAX, type TicketState } from '@ark/shared';
import { mayRead, type TicketCaller, type TicketParties } from '../../domain/tickets/ticket.js';
import { DomainError } from '../../errors.js';
import type { Tx } from '../../store/db.js';
import {
  findTicket,
  listAllTickets,
  listTicketsOfOpener,
  lockTicket,
  messagesOfTicket,
  type TicketMessageRow,
  type TicketRow,
} from '../../store/tickets.js';
import type { TicketDeps } from './deps.js';

export const partiesOf = (ticket: TicketRow): TicketParties => ({
  openerAccountId: ticket.account_id,
  hostAccountId: ticket.host_account_id,
  renterAccountId: ticket.renter_account_id,
  state: ticket.state,
});

/** The ticket row locked in the caller's transaction, with its parties; NOT_FOUND when there is none. */
export async function lockedTicket(trx: Tx, ticketId: string): Promise<{ ticket: TicketRow; parties: TicketParties }> {
  const ticket = await lockTicket(trx, ticketId);
  if (!ticket) throw new DomainError('NOT_FOUND', 'No ticket of yours has this id.');
  return { ticket, parties: partiesOf(ticket) };
}

/** A case with its messages, for a party to it; NOT_FOUND for anyone else (existence does not leak). */
export async function ticketWithMessages(
  deps: TicketDeps,
  ticketId: string,
  caller: TicketCaller,
): Promise<{ ticket: TicketRow; messages: TicketMessageRow[] }> {
  const ticket = await findTicket(deps.store.db, ticketId);
  if (!ticket || !mayRead(partiesOf(ticket), caller)) throw new DomainError('NOT_FOUND', 'No ticket of yours has this id.');
  return { ticket, messages: await messagesOfTicket(deps.store.db, ticket.id, TICKET_MESSAGES_MAX) };
}

/** The caller's own cases as opener, ordered by id. */
export function ticketsOfOpener(deps: TicketDeps, accountId: string, afterId: string | null, fetch: number): Promise<TicketRow[]> {
  return listTicketsOfOpener(deps.store.db, accountId, afterId, fetch);
}

/** The operators' queue: every case, optionally in one state, ordered by id. */
export function ticketQueue(deps: TicketDeps, state: TicketState | undefined, afterId: string | null, fetch: number): Promise<TicketRow[]> {
  return listAllTickets(deps.store.db, state, afterId, fetch);
}
