import { expect, it } from 'vitest';
import { canMove, ForbiddenStateMove, type MoveTable } from '../domain/moves.js';

// Walks every pair of an aggregate's states against a move table: the expected moves are written out in the test,
// apart from the table, so a move added to or dropped from the table shows up here.

/**
 * One case per (from, to) pair, self-moves included: `allowed` lists the moves as 'FROM -> TO'; each passes `assert`,
 * and every other pair is refused with ForbiddenStateMove.
 */
export function walkEveryMove<S extends string>(
  states: readonly S[],
  table: MoveTable<S>,
  allowed: readonly string[],
  assert: (from: S, to: S) => void,
): void {
  const expected = new Set(allowed);
  const pairs: [S, S][] = states.flatMap((from) => states.map((to): [S, S] => [from, to]));

  it('names only known states, and each known state has a row', () => {
    expect(Object.keys(table).sort()).toEqual([...states].sort());
    for (const move of expected) expect(pairs.map(([from, to]) => `${from} -> ${to}`)).toContain(move);
  });

  it.each(pairs)('%s -> %s', (from, to) => {
    const allowedHere = expected.has(`${from} -> ${to}`);
    expect(canMove(table, from, to)).toBe(allowedHere);
    if (allowedHere) expect(() => assert(from, to)).not.toThrow();
    else expect(() => assert(from, to)).toThrow(ForbiddenStateMove);
  });
}
