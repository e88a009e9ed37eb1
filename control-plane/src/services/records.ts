import type { CommitHook } from '../store/transaction.js';

// Services hand out records, not rows (issue 23 item 4): a use case that works on store rows maps what it returns at
// its boundary, and a commit hook the route passed in (the idempotent answer, built by a view) sees the record too.

/** A hook on records, run as a hook on the rows the use case works on: each row is mapped before the hook sees it. */
export function commitMapped<Row, Rec>(commit: CommitHook<Rec> | undefined, toRecord: (row: Row) => Rec): CommitHook<Row> | undefined {
  return commit === undefined ? undefined : (trx, row) => commit(trx, toRecord(row));
}
