import type { ReferenceExpression, SelectQueryBuilder } from 'kysely';

/** A page's position: the sort key of the last row shown, as the cursor carries it. */
export type KeysetPosition = readonly [unknown, unknown];

/**
 * Keyset pagination over two columns (a sort column and a unique tie-breaker): rows after `after` in `direction`
 * order, at most `fetch` of them. Cheap at any depth, unlike an offset, and stable while rows are added.
 */
export function keysetPage<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  keys: readonly [ReferenceExpression<DB, TB>, ReferenceExpression<DB, TB>],
  direction: 'asc' | 'desc',
  after: KeysetPosition | null,
  fetch: number,
): SelectQueryBuilder<DB, TB, O> {
  const [sort, tieBreak] = keys;
  const beyond = direction === 'desc' ? '<' : '>';
  let page = query;
  if (after) {
    const [sortValue, tieValue] = after as [any, any];
    page = page.where((eb) => eb.or([eb(sort, beyond, sortValue), eb.and([eb(sort, '=', sortValue), eb(tieBreak, beyond, tieValue)])]));
  }
  return page
    .orderBy(sort as any, direction)
    .orderBy(tieBreak as any, direction)
    .limit(fetch);
}
