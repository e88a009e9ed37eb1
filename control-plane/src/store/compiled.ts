import { type Compilable, createQueryId, type Kysely, type QueryResult, RawNode, type RootOperationNode } from 'kysely';
import { type Dialect, dialectOf, type Executor, sqliteRunNow } from './db.js';
import type { Database } from './schema.js';

// Statements of the agent channel's hot paths (every heartbeat, telemetry batch and receipt), compiled once instead
// of built and compiled by Kysely on every call. Building a query (its operation nodes, frozen) and compiling it to
// SQL cost more CPU than SQLite takes to run a small statement: at 10,000 agents Kysely's builder and compiler took
// about a tenth of the control plane's CPU (test/bench/README.md, "Where a frame's CPU goes"). They run on the
// caller's connection or transaction, as Kysely would run them: on SQLite inside a use case's transaction, or as a
// read outside any while none is open, at once on the store's connection through its statement cache (db.ts,
// sqliteRunNow); otherwise through Kysely's executor. Either way the same statement, the same transaction, the same
// answer.

/** A statement's text and where each call's arguments go among its parameters. */
interface Prepared {
  sql: string;
  query: RootOperationNode;
  /** The compiled parameters: constants, and stand-ins where the arguments go. */
  constants: readonly unknown[];
  /** For each parameter, the argument it takes, or -1 for a constant. */
  slots: readonly number[];
}

const STAND_IN = '\u0000ark-argument:';

/**
 * A query built by `build` and compiled by Kysely once per dialect, then run with each call's arguments.
 *
 * `build` receives stand-ins for the arguments and must hand each to Kysely as a value, unchanged and whole: a
 * comparison's operand, a column's value in a row or a SET. A stand-in that `build` transforms (`BigInt(x)`,
 * `iso(x)`) or uses to shape the query (an `in` list, a condition added or not) never reaches the statement as a
 * parameter: the first compile throws for it. So arguments are scalars, converted by the caller; everything else
 * in `build` is compiled in as it is.
 */
export function compiledOnce<A extends readonly unknown[], O>(
  build: (db: Kysely<Database>, ...args: A) => Compilable<O>,
): (db: Executor, ...args: A) => Promise<QueryResult<O>> {
  const byDialect = new Map<Dialect, Prepared>();
  return (db, ...args) => {
    const dialect = dialectOf(db);
    let prepared = byDialect.get(dialect);
    if (!prepared) {
      try {
        prepared = prepare(db, build, args.length);
      } catch (error) {
        return Promise.reject(error);
      }
      byDialect.set(dialect, prepared);
    }
    const { constants, slots } = prepared;
    const parameters = new Array<unknown>(slots.length);
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as number;
      parameters[i] = slot < 0 ? constants[i] : args[slot];
    }
    return run(db, prepared.sql, prepared.query, parameters);
  };
}

function prepare<A extends readonly unknown[], O>(
  db: Executor,
  build: (db: Kysely<Database>, ...args: A) => Compilable<O>,
  arity: number,
): Prepared {
  const standIns = Array.from({ length: arity }, (_, i) => `${STAND_IN}${i}`) as unknown as A;
  const compiled = build(db, ...standIns).compile();
  const slots = compiled.parameters.map((value) =>
    typeof value === 'string' && value.startsWith(STAND_IN) ? Number(value.slice(STAND_IN.length)) : -1,
  );
  for (let i = 0; i < arity; i++) {
    if (!slots.includes(i)) throw new Error(`compiledOnce: argument ${i} never reaches the statement as a parameter (${compiled.sql})`);
  }
  return { sql: compiled.sql, query: compiled.query, constants: compiled.parameters, slots };
}

/**
 * Runs SQL text written for the store's dialect (the caller's, with `?` on SQLite and `$1`.. on Postgres: see
 * rowsStatement) with `parameters`, through Kysely's executor as compiledOnce does. For statements whose shape varies
 * with the data (a VALUES list of n rows), whose text the caller builds once per shape.
 */
export function runSql<O>(db: Executor, sqlText: string, parameters: readonly unknown[]): Promise<QueryResult<O>> {
  return run(db, sqlText, undefined, parameters);
}

/**
 * Runs a statement on SQLite at once on the store's connection where it can (db.ts, sqliteRunNow: inside a use case's
 * transaction, or a read outside any), else through Kysely's executor.
 */
function run<O>(
  db: Executor,
  sqlText: string,
  query: RootOperationNode | undefined,
  parameters: readonly unknown[],
): Promise<QueryResult<O>> {
  let result: QueryResult<O> | undefined;
  try {
    result = sqliteRunNow<O>(db, sqlText, parameters);
  } catch (error) {
    return Promise.reject(error);
  }
  if (result) return Promise.resolve(result);
  return db.executeQuery<O>({ sql: sqlText, query: query ?? RawNode.createWithSql(sqlText), parameters, queryId: createQueryId() });
}

/** Statement texts kept per rowsStatement (the oldest built goes first when full). */
const TEXTS_KEPT = 64;

/**
 * A statement over a VALUES list whose length varies with the data (an upsert of n rows), as text built once per
 * dialect and row count: `text` is given the list, `(?, ?), (?, ?)` on SQLite and `($1, $2), ($3, $4)` on Postgres,
 * for `rows` rows of `columns` parameters. The last TEXTS_KEPT shapes are kept. Run it with runSql.
 */
export function rowsStatement(
  columns: number,
  text: (dialect: Dialect, values: string) => string,
): (dialect: Dialect, rows: number) => string {
  const kept = new Map<string, string>();
  return (dialect, rows) => {
    const key = `${dialect}:${rows}`;
    let statement = kept.get(key);
    if (statement === undefined) {
      statement = text(dialect, valuesList(dialect, rows, columns));
      if (kept.size >= TEXTS_KEPT) kept.delete(kept.keys().next().value as string);
      kept.set(key, statement);
    }
    return statement;
  };
}

function valuesList(dialect: Dialect, rows: number, columns: number): string {
  const groups = new Array<string>(rows);
  for (let r = 0; r < rows; r++) {
    const row = new Array<string>(columns);
    for (let c = 0; c < columns; c++) row[c] = dialect === 'postgres' ? `$${r * columns + c + 1}` : '?';
    groups[r] = `(${row.join(', ')})`;
  }
  return groups.join(', ');
}

/**
 * A statement written once with `?` for its parameters, as each dialect takes it: unchanged on SQLite, `$1`, `$2`..
 * in order on Postgres. The text must hold no `?` other than its parameters. Run it with runSql.
 */
export function bothDialects(text: string): (dialect: Dialect) => string {
  let n = 0;
  const postgres = text.replace(/\?/g, () => `$${++n}`);
  return (dialect) => (dialect === 'postgres' ? postgres : text);
}
