import type { TicketDetail, TicketSummary } from '@ark/shared';
import type { TicketMessageRecord, TicketRecord } from '../services/tickets/index.js';

// Support cases (issue 10) as the wire shows them (shared/src/http/tickets.ts).

export function ticketSummaryView(t: TicketRecord): TicketSummary {
  return { ticket_id: t.id, category: t.category, state: t.state, job_id: t.jobId, created_at: t.createdAt };
}

export function ticketDetailView(t: TicketRecord, messages: TicketMessageRecord[]): TicketDetail {
  return {
    ticket_id: t.id,
    category: t.category,
    state: t.state,
    job_id: t.jobId,
    created_at: t.createdAt,
    closed_at: t.closedAt,
    messages: messages.map((m) => ({ message_id: m.id, author_role: m.authorRole, text: m.text, created_at: m.createdAt })),
  };
}
