import type { TicketAuthorRole, TicketState } from '@ark/shared';
import type { TicketMessageRow, TicketRow } from '../../store/tickets.js';

// The ticket services' records: what routes and views see of a case and its messages, never their rows.

/** A support case. Times are the stored RFC 3339 text. */
export interface TicketRecord {
  /** A UUIDv7: id order is creation order. */
  id: string;
  /** The opener. */
  accountId: string;
  category: string;
  state: TicketState;
  jobId: string | null;
  createdAt: string;
  closedAt: string | null;
}

export const toTicketRecord = (row: TicketRow): TicketRecord => ({
  id: row.id,
  accountId: row.account_id,
  category: row.category,
  state: row.state,
  jobId: row.job_id,
  createdAt: row.created_at,
  closedAt: row.closed_at,
});

export interface TicketMessageRecord {
  id: string;
  ticketId: string;
  authorRole: TicketAuthorRole;
  text: string;
  createdAt: string;
}

export const toTicketMessageRecord = (row: TicketMessageRow): TicketMessageRecord => ({
  id: row.id,
  ticketId: row.ticket_id,
  authorRole: row.author_role,
  text: row.text,
  createdAt: row.created_at,
});
