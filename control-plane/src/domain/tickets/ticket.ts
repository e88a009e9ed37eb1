import { randomBytes } from 'node:crypto';
import type { TicketAuthorRole, TicketState } from '@ark/shared';

// The rules of a support case: who may read it, write on it, close and reopen it. Pure: takes the case's parties
// and the caller, answers a decision.

/** Who is asking: an account, and whether it acts as an operator (an admin's interactive session). */
export interface TicketCaller {
  accountId: string;
  isAdmin: boolean;
}

/** The parties of a case: its opener and, for a case about a rental, the rental's host and renter. */
export interface TicketParties {
  openerAccountId: string;
  hostAccountId: string | null;
  renterAccountId: string | null;
  state: TicketState;
}

/** The role the caller writes as, or null when the caller is no party to the case. The opener's role wins. */
export function authorRoleOf(ticket: TicketParties, caller: TicketCaller): TicketAuthorRole | null {
  if (caller.accountId === ticket.openerAccountId) return 'opener';
  if (ticket.hostAccountId !== null && caller.accountId === ticket.hostAccountId) return 'host';
  if (caller.isAdmin) return 'admin';
  return null;
}

export type TicketWriteDecision = { ok: true; role: TicketAuthorRole } | { ok: false; refusal: 'forbidden' | 'closed' };

/** Contract part 4: the opener, the rental's host or an admin may post to an open case; anyone else is refused first. */
export function decideMessage(ticket: TicketParties, caller: TicketCaller): TicketWriteDecision {
  const role = authorRoleOf(ticket, caller);
  if (role === null) return { ok: false, refusal: 'forbidden' };
  if (ticket.state !== 'open') return { ok: false, refusal: 'closed' };
  return { ok: true, role };
}

/** Closing and reopening belong to the opener and operators (a rental's host may write, not end the case). */
export function mayChangeState(ticket: TicketParties, caller: TicketCaller): boolean {
  return caller.accountId === ticket.openerAccountId || caller.isAdmin;
}

/**
 * Who may read the case: whoever may write on it (its state aside), and the renter of a rental whose host opened it
 * (told of it, it sees what is said about its rental; writing stays with the parties the contract names).
 */
export function mayRead(ticket: TicketParties, caller: TicketCaller): boolean {
  return authorRoleOf(ticket, caller) !== null || (ticket.renterAccountId !== null && caller.accountId === ticket.renterAccountId);
}

/** Accounts told of a new message (`ticket.message_created`): every party but its author. */
export function partiesToTell(ticket: TicketParties, authorAccountId: string): string[] {
  const parties = [ticket.openerAccountId, ticket.hostAccountId, ticket.renterAccountId];
  return [...new Set(parties.filter((id): id is string => id !== null && id !== authorAccountId))];
}

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Ticket lists are ordered by id, and a time-
 * ordered id makes that creation order.
 */
export function uuidV7(at: Date, random: Buffer = randomBytes(10)): string {
  const bytes = Buffer.alloc(16);
  bytes.writeUIntBE(at.getTime(), 0, 6);
  random.copy(bytes, 6, 0, 10);
  bytes[6] = 0x70 | ((bytes[6] ?? 0) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
