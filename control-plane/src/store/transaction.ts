import { isRetryableConflict, type Store, type Tx, withSqliteTransaction } from './db.js';

/**
 * Work that must commit together with a use case's effect, or not at all. A use case that accepts one calls it
 * inside its transaction, after its writes and before commit, with what it is about to return. The idempotency
 * layer passes one that stores the request's answer (`answerInTransaction` in http/idempotency.ts), so that after
 * any crash a key has either no effect and no answer, or both.
 */
export type CommitHook<R> = (trx: Tx, result: R) => Promise<void>;

export interface TransactionOptions {
  /** Bounded retries of serialization failures, deadlocks and a busy SQLite file (default 5, at most 20). */
  maxAttempts?: number;
}

/** Runs `work` in a transaction, retrying transient conflicts (never DomainErrors) up to maxAttempts. */
export async function inTransactionWithRetry<T>(store: Store, work: (trx: Tx) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  const maxAttempts = Math.max(1, Math.min(options.maxAttempts ?? 5, 20));
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.db.transaction().execute((trx) => withSqliteTransaction(store, trx, work));
    } catch (error) {
      if (attempt >= maxAttempts || !isTransient(error)) throw error;
      // Jittered, bounded backoff so retried peers do not collide again. Real milliseconds against a real database,
      // not the injected clock: on a manual clock concurrent writers in a test would wait forever for each other.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2 ** attempt, 50)));
    }
  }
}

/**
 * A use case's transaction: `work` does the effect and returns the result, then `commit` (if any) runs in the same
 * transaction with that result. Transient conflicts retry the whole (work + commit hook).
 */
export function transact<T>(
  store: Store,
  work: (trx: Tx) => Promise<T>,
  commit?: CommitHook<T>,
  options: TransactionOptions = {},
): Promise<T> {
  return inTransactionWithRetry(
    store,
    async (trx) => {
      const result = await work(trx);
      if (commit) await commit(trx, result);
      return result;
    },
    options,
  );
}

export function isTransient(error: unknown): boolean {
  if (isRetryableConflict(error)) return true;
  // better-sqlite3 reports extended codes too (SQLITE_BUSY_SNAPSHOT when a read snapshot cannot upgrade).
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
