// Tables of allowed state moves for the money aggregates (withdrawals and payouts, deposits, x402 intents), as the
// job table in domain/jobs/states.ts is for jobs. Each aggregate's table sits beside its list of states; the store's
// one state-writing function per aggregate asks `assertMove` before it writes, and compares-and-sets on `from`.
//
// A table is a Record over every state, so a state added to the list fails the typecheck until its row is written.
// A state that stays (`from === to`, a write of other columns) is a move too: allowed only where its row lists it.

export type MoveTable<S extends string> = Readonly<Record<S, readonly S[]>>;

/**
 * A state write the table forbids: a programming error (no request may cause one), answered as an internal error.
 * Nothing was written.
 */
export class ForbiddenStateMove extends Error {
  override name = 'ForbiddenStateMove';
  readonly aggregate: string;
  readonly from: string;
  readonly to: string;
  constructor(aggregate: string, from: string, to: string) {
    super(`${aggregate} state move ${from} -> ${to} is not allowed`);
    this.aggregate = aggregate;
    this.from = from;
    this.to = to;
  }
}

export function canMove<S extends string>(table: MoveTable<S>, from: S, to: S): boolean {
  return table[from]?.includes(to) ?? false;
}

/** Throws ForbiddenStateMove unless the table allows `from -> to`. */
export function assertMove<S extends string>(aggregate: string, table: MoveTable<S>, from: S, to: S): void {
  if (!canMove(table, from, to)) throw new ForbiddenStateMove(aggregate, from, to);
}
