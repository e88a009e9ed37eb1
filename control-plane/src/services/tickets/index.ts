import type { TicketState } from '@ark/shared';
import type { Clock } from '../../clock.js';
import type { TicketCaller } from '../../domain/tickets/ticket.js';
import type { Store } from '../../store/db.js';
import type { CommitHook } from '../../store/transaction.js';
import { commitMapped } from '../records.js';
import type { TicketDeps } from './deps.js';
import { postTicketMessage } from './messages.js';
import { type OpenTicketInput, openTicket } from './open.js';
import { ticketQueue, ticketsOfOpener, ticketWithMessages } from './reads.js';
import { type TicketMessageRecord, type TicketRecord, toTicketMessageRecord, toTicketRecord } from './records.js';
import { setTicketStateAs } from './state.js';

export type { TicketMessageRecord, TicketRecord } from './records.js';

/** Support tickets (issue 10): open, read, write on, close and reopen a case; the operators' queue. */
export function buildTicketServices(input: { store: Store; clock: Clock }) {
  const deps: TicketDeps = input;
  return {
    open: async (ticket: OpenTicketInput, commit?: CommitHook<TicketRecord>): Promise<TicketRecord> =>
      toTicketRecord(await openTicket(deps, ticket, commitMapped(commit, toTicketRecord))),
    postMessage: async (
      message: { ticketId: string; caller: TicketCaller; text: string },
      commit?: CommitHook<TicketMessageRecord>,
    ): Promise<TicketMessageRecord> =>
      toTicketMessageRecord(await postTicketMessage(deps, message, commitMapped(commit, toTicketMessageRecord))),
    setState: async (
      change: { ticketId: string; caller: TicketCaller; state: TicketState },
      commit?: CommitHook<TicketRecord>,
    ): Promise<TicketRecord> => toTicketRecord(await setTicketStateAs(deps, change, commitMapped(commit, toTicketRecord))),
    get: async (ticketId: string, caller: TicketCaller): Promise<{ ticket: TicketRecord; messages: TicketMessageRecord[] }> => {
      const { ticket, messages } = await ticketWithMessages(deps, ticketId, caller);
      return { ticket: toTicketRecord(ticket), messages: messages.map(toTicketMessageRecord) };
    },
    listOwn: async (accountId: string, afterId: string | null, fetch: number): Promise<TicketRecord[]> =>
      (await ticketsOfOpener(deps, accountId, afterId, fetch)).map(toTicketRecord),
    queue: async (state: TicketState | undefined, afterId: string | null, fetch: number): Promise<TicketRecord[]> =>
      (await ticketQueue(deps, state, afterId, fetch)).map(toTicketRecord),
  };
}

export type TicketServices = ReturnType<typeof buildTicketServices>;
