import type { TicketAuthorRole, TicketState } from '@ark/shared';

/** A support case, opened by an account, optionally about one of its rentals (as renter or as host). */
export interface TicketsTable {
  /** A UUIDv7: id order is creation order, so lists ordered by id read oldest first. */
  id: string;
  /** The opener. */
  account_id: string;
  category: string;
  state: TicketState;
  job_id: string | null;
  /** The host of the ticket's rental (the job's host at reservation), who may write on the case; null without a job. */
  host_account_id: string | null;
  /** The rental's renter, when the opener is its host (so the renter hears of the case); null otherwise. */
  renter_account_id: string | null;
  message_count: bigint;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
}

/** What was written on a ticket, oldest first; stored exactly as given. */
export interface TicketMessagesTable {
  id: string;
  ticket_id: string;
  /** 1, 2, ... per ticket. */
  seq: bigint;
  author_account_id: string;
  author_role: TicketAuthorRole;
  text: string;
  created_at: string;
}

export interface TicketsTables {
  tickets: TicketsTable;
  ticket_messages: TicketMessagesTable;
}
