import { TICKET_MESSAGES_MAX } from '@ark/shared';
import { decideMessage, partiesToTell, type TicketCaller } from '../../domain/tickets/ticket.js';
import { DomainError } from '../../errors.js';
import { insertTicketMessage, type TicketMessageRow } from '../../store/tickets.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import type { TicketDeps } from './deps.js';
import { lockedTicket } from './reads.js';

/**
 * Writes on an open case (contract part 4): the opener, the rental's host or an admin; anyone else TICKET_FORBIDDEN
 * (403), a closed case TICKET_CLOSED (409). The other parties are told (`ticket.message_created`) in the same
 * transaction.
 */
export function postTicketMessage(
  deps: TicketDeps,
  input: { ticketId: string; caller: TicketCaller; text: string },
  commit?: CommitHook<TicketMessageRow>,
): Promise<TicketMessageRow> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const { ticket, parties } = await lockedTicket(trx, input.ticketId);
      const decision = decideMessage(parties, input.caller);
      if (!decision.ok) throw new DomainError(decision.refusal === 'forbidden' ? 'TICKET_FORBIDDEN' : 'TICKET_CLOSED');
      if (ticket.message_count >= BigInt(TICKET_MESSAGES_MAX)) throw new DomainError('TICKET_MESSAGE_LIMIT_REACHED');
      const message = await insertTicketMessage(
        trx,
        { id: ticket.id, messageCount: ticket.message_count },
        { authorAccountId: input.caller.accountId, authorRole: decision.role, text: input.text, now },
      );
      // The text itself is not sent: a receiver reads the case with its own credential.
      const data = { ticket_id: ticket.id, message_id: message.id, author_role: decision.role, job_id: ticket.job_id };
      for (const accountId of partiesToTell(parties, input.caller.accountId)) {
        await emitWebhookEvent(trx, accountId, 'ticket.message_created', data, now);
      }
      return message;
    },
    commit,
  );
}
