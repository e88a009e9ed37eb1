import type { Clock } from '../../clock.js';
import type { Store } from '../../store/db.js';
import type { TicketDeps } from './deps.js';
import { postTicketMessage } from './messages.js';
import { openTicket } from './open.js';
import { ticketQueue, ticketsOfOpener, ticketWithMessages } from './reads.js';
import { setTicketStateAs } from './state.js';

/** Support tickets (issue 10): open, read, write on, close and reopen a case; the operators' queue. */
export function buildTicketServices(input: { store: Store; clock: Clock }) {
  const deps: TicketDeps = input;
  return {
    open: (...args: DropDeps<typeof openTicket>) => openTicket(deps, ...args),
    postMessage: (...args: DropDeps<typeof postTicketMessage>) => postTicketMessage(deps, ...args),
    setState: (...args: DropDeps<typeof setTicketStateAs>) => setTicketStateAs(deps, ...args),
    get: (...args: DropDeps<typeof ticketWithMessages>) => ticketWithMessages(deps, ...args),
    listOwn: (...args: DropDeps<typeof ticketsOfOpener>) => ticketsOfOpener(deps, ...args),
    queue: (...args: DropDeps<typeof ticketQueue>) => ticketQueue(deps, ...args),
  };
}

type DropDeps<F> = F extends (deps: TicketDeps, ...rest: infer R) => unknown ? R : never;

export type TicketServices = ReturnType<typeof buildTicketServices>;
