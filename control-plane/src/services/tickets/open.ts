import { uuidV7 } from '../../domain/tickets/ticket.js';
import { DomainError } from '../../errors.js';
import { findJobRow } from '../../store/jobs.js';
import { insertTicket, insertTicketMessage, type TicketRow } from '../../store/tickets.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { TicketDeps } from './deps.js';

export interface OpenTicketInput {
  accountId: string;
  category: string;
  text: string;
  jobId: string | null;
}

/**
 * Opens a case with its first message. A case about a rental names a job of the opener's, as its renter or its host;
 * the other party of the rental becomes a party of the case (the host may write on it, the renter hears of it).
 */
export function openTicket(deps: TicketDeps, input: OpenTicketInput, commit?: CommitHook<TicketRow>): Promise<TicketRow> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      let hostAccountId: string | null = null;
      let renterAccountId: string | null = null;
      if (input.jobId !== null) {
        const job = await findJobRow(trx, input.jobId);
        if (!job || (job.account_id !== input.accountId && job.host_account_id !== input.accountId))
          throw new DomainError('TICKET_JOB_NOT_FOUND');
        hostAccountId = job.host_account_id;
        renterAccountId = job.account_id;
      }
      const ticket = await insertTicket(trx, {
        id: uuidV7(now),
        accountId: input.accountId,
        category: input.category,
        jobId: input.jobId,
        hostAccountId,
        renterAccountId,
        now,
      });
      await insertTicketMessage(
        trx,
        { id: ticket.id, messageCount: 0n },
        { authorAccountId: input.accountId, authorRole: 'opener', text: input.text, now },
      );
      return { ...ticket, message_count: 1n };
    },
    commit,
  );
}
