import { randomUUID } from 'node:crypto';
import type { TicketAuthorRole, TicketState } from '@ark/shared';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import { type Executor, isPostgres, type Tx } from './db.js';
import { keysetPage } from './keyset.js';
import type { TicketMessagesTable, TicketsTable } from './tables/tickets.js';

// Support tickets and their messages. A ticket row is locked (Postgres; SQLite serialises writers) while a message is
// added or its state changes, so the message count and the state are decided on what is there.

export type TicketRow = Selectable<TicketsTable>;
export type TicketMessageRow = Selectable<TicketMessagesTable>;

export interface NewTicket {
  id: string;
  accountId: string;
  category: string;
  jobId: string | null;
  hostAccountId: string | null;
  renterAccountId: string | null;
  now: Date;
}

export async function insertTicket(db: Executor, ticket: NewTicket): Promise<TicketRow> {
  const at = iso(ticket.now);
  const row: TicketRow = {
    id: ticket.id,
    account_id: ticket.accountId,
    category: ticket.category,
    state: 'open',
    job_id: ticket.jobId,
    host_account_id: ticket.hostAccountId,
    renter_account_id: ticket.renterAccountId,
    message_count: 0n,
    created_at: at,
    updated_at: at,
    closed_at: null,
  };
  await db.insertInto('tickets').values(row).execute();
  return row;
}

export async function findTicket(db: Executor, id: string): Promise<TicketRow | undefined> {
  return db.selectFrom('tickets').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The ticket row, locked until the transaction ends: messages are numbered on its count. */
export async function lockTicket(trx: Tx, id: string): Promise<TicketRow | undefined> {
  const query = trx.selectFrom('tickets').selectAll().where('id', '=', id);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst();
}

/** Appends a message to a ticket the caller holds locked, numbered after its last one. */
export async function insertTicketMessage(
  trx: Tx,
  ticket: { id: string; messageCount: bigint },
  input: { authorAccountId: string; authorRole: TicketAuthorRole; text: string; now: Date },
): Promise<TicketMessageRow> {
  const row: TicketMessageRow = {
    id: randomUUID(),
    ticket_id: ticket.id,
    seq: ticket.messageCount + 1n,
    author_account_id: input.authorAccountId,
    author_role: input.authorRole,
    text: input.text,
    created_at: iso(input.now),
  };
  await trx.insertInto('ticket_messages').values(row).execute();
  await trx.updateTable('tickets').set({ message_count: row.seq, updated_at: row.created_at }).where('id', '=', ticket.id).execute();
  return row;
}

export async function setTicketState(trx: Tx, id: string, state: TicketState, now: Date): Promise<void> {
  await trx
    .updateTable('tickets')
    .set({ state, closed_at: state === 'closed' ? iso(now) : null, updated_at: iso(now) })
    .where('id', '=', id)
    .execute();
}

/** A ticket's messages, oldest first (bounded by the per-ticket limit enforced on insert). */
export async function messagesOfTicket(db: Executor, ticketId: string, limit: number): Promise<TicketMessageRow[]> {
  return db.selectFrom('ticket_messages').selectAll().where('ticket_id', '=', ticketId).orderBy('seq').limit(limit).execute();
}

/** The account's tickets as opener, ordered by id, after the cursor's id. */
export async function listTicketsOfOpener(db: Executor, accountId: string, afterId: string | null, fetch: number): Promise<TicketRow[]> {
  const query = db.selectFrom('tickets').selectAll().where('account_id', '=', accountId);
  return keysetPage(query, ['id', 'id'], 'asc', afterId === null ? null : [afterId, afterId], fetch).execute();
}

/** Every ticket (the operators' queue), optionally in one state, ordered by id. */
export async function listAllTickets(
  db: Executor,
  state: TicketState | undefined,
  afterId: string | null,
  fetch: number,
): Promise<TicketRow[]> {
  let query = db.selectFrom('tickets').selectAll();
  if (state !== undefined) query = query.where('state', '=', state);
  return keysetPage(query, ['id', 'id'], 'asc', afterId === null ? null : [afterId, afterId], fetch).execute();
}
