import { type Static, Type } from '@sinclair/typebox';
import { Nullable, Rfc3339Utc, Uuid } from '../formats.js';
import { PageQuery } from './common.js';

// Support tickets (contract parts 2, 3 and 4). Text is stored exactly as given and only ever served as JSON text.

/** The longest ticket or message text, in characters. */
export const TICKET_TEXT_LENGTH_MAX = 10_000;
/** Messages one ticket may hold (the opening text counts): a ticket view stays bounded. */
export const TICKET_MESSAGES_MAX = 200;

/** A ticket is either open or closed (contract part 3: an unconstrained string on the wire). */
export const TicketState = Type.Union([Type.Literal('open'), Type.Literal('closed')]);
export type TicketState = Static<typeof TicketState>;

/** Ticket summary (contract part 2): the list item. */
export const TicketSummary = Type.Object(
  {
    ticket_id: Uuid,
    category: Type.String(),
    state: Type.String(),
    job_id: Nullable(Uuid),
    created_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type TicketSummary = Static<typeof TicketSummary>;

export const TicketCreateRequest = Type.Object(
  {
    category: Type.String({ minLength: 1, maxLength: 64, description: 'billing, rental, hosting, account, other, or any short label' }),
    text: Type.String({ minLength: 1, maxLength: TICKET_TEXT_LENGTH_MAX }),
    job_id: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
export type TicketCreateRequest = Static<typeof TicketCreateRequest>;

export const TicketMessageRequest = Type.Object(
  { text: Type.String({ minLength: 1, maxLength: TICKET_TEXT_LENGTH_MAX }) },
  { additionalProperties: false },
);
export type TicketMessageRequest = Static<typeof TicketMessageRequest>;

/** Who wrote a message, as seen on the case: its opener, the host of the ticket's rental, or an operator. */
export const TicketAuthorRole = Type.Union([Type.Literal('opener'), Type.Literal('host'), Type.Literal('admin')]);
export type TicketAuthorRole = Static<typeof TicketAuthorRole>;

export const TicketMessage = Type.Object(
  {
    message_id: Uuid,
    author_role: TicketAuthorRole,
    /** Plain text, exactly as written; never HTML. */
    text: Type.String(),
    created_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type TicketMessage = Static<typeof TicketMessage>;

/** One ticket with its messages, oldest first. */
export const TicketDetail = Type.Object(
  {
    ticket_id: Uuid,
    category: Type.String(),
    state: TicketState,
    job_id: Nullable(Uuid),
    created_at: Rfc3339Utc,
    closed_at: Nullable(Rfc3339Utc),
    messages: Type.Array(TicketMessage, { maxItems: TICKET_MESSAGES_MAX }),
  },
  { additionalProperties: false },
);
export type TicketDetail = Static<typeof TicketDetail>;

export const AdminTicketQuery = Type.Object(
  { ...PageQuery.properties, state: Type.Optional(TicketState) },
  { additionalProperties: false },
);
export type AdminTicketQuery = Static<typeof AdminTicketQuery>;
