import { createHmac, timingSafeEqual } from 'node:crypto';
import { PAGE_LIMIT_DEFAULT } from '@ark/shared';
import { DomainError } from '../errors.js';

/**
 * Opaque, tamper-evident cursors: base64url(JSON position) + "." + HMAC. A forged or edited cursor is 422,
 * never a silent jump to some other page.
 */
export class Paginator {
  readonly #key: Buffer;
  constructor(secretKey: Buffer) {
    this.#key = createHmac('sha256', secretKey).update('ark-cursor-v1').digest();
  }

  encode(scope: string, position: unknown): string {
    const body = Buffer.from(JSON.stringify({ s: scope, p: position })).toString('base64url');
    return `${body}.${this.#sign(body)}`;
  }

  /** Returns the position stored in the cursor, or null when there is none. Throws INVALID_CURSOR. */
  decode<T>(scope: string, cursor: string | undefined): T | null {
    if (cursor === undefined) return null;
    const [body, signature, extra] = cursor.split('.');
    if (!body || !signature || extra !== undefined) throw new DomainError('INVALID_CURSOR');
    const expected = Buffer.from(this.#sign(body));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw new DomainError('INVALID_CURSOR');
    const parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { s: string; p: T };
    // A cursor from another list is as wrong as a forged one.
    if (parsed.s !== scope) throw new DomainError('INVALID_CURSOR', 'The cursor belongs to another list.');
    return parsed.p;
  }

  /**
   * Builds a page from `limit + 1` fetched rows: the extra row only tells that a next page exists.
   * `positionOf` gives the sort key of the last returned row.
   */
  page<Row, Item>(scope: string, rows: Row[], limit: number | undefined, positionOf: (row: Row) => unknown, toItem: (row: Row) => Item) {
    const size = limit ?? PAGE_LIMIT_DEFAULT;
    const visible = rows.slice(0, size);
    const last = visible[visible.length - 1];
    const next_cursor = rows.length > size && last !== undefined ? this.encode(scope, positionOf(last)) : null;
    return { items: visible.map(toItem), next_cursor };
  }

  #sign(body: string): string {
    return createHmac('sha256', this.#key).update(body).digest('base64url').slice(0, 32);
  }
}

/** How many rows to fetch for a page of `limit` items. */
export const fetchSize = (limit: number | undefined): number => (limit ?? PAGE_LIMIT_DEFAULT) + 1;
