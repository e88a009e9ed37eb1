import { describe, expect, it } from 'vitest';
import { walkEveryMove } from '../../testing/moves.js';
import { ForbiddenStateMove } from '../moves.js';
import { assertWithdrawalMove, assertWithdrawalStart, PAID_KINDS, WITHDRAWAL_MOVES, WITHDRAWAL_STATES } from './states.js';

// Every pair of a paid request's states, per kind: the moves services/withdrawals/ makes pass, every other is refused.

/** An account's request: held and reviewed before a nonce is pinned, never after. */
const REQUEST_MOVES = [
  'INTENT -> INTENT',
  'INTENT -> UNSIGNED',
  'INTENT -> SIGNED',
  'INTENT -> FAILED',
  'UNSIGNED -> INTENT',
  'UNSIGNED -> FAILED',
  'SIGNED -> BROADCAST',
  'BROADCAST -> BROADCAST',
  'BROADCAST -> CONFIRMED',
  'BROADCAST -> FAILED',
];

/** A refund: the operator's decision, never held nor reviewed. */
const REFUND_MOVES = ['INTENT -> SIGNED', 'SIGNED -> BROADCAST', 'BROADCAST -> BROADCAST', 'BROADCAST -> CONFIRMED', 'BROADCAST -> FAILED'];

describe('withdrawal moves', () => {
  describe('withdrawal', () =>
    walkEveryMove(WITHDRAWAL_STATES, WITHDRAWAL_MOVES.withdrawal, REQUEST_MOVES, (f, t) => assertWithdrawalMove('withdrawal', f, t)));
  describe('payout', () =>
    walkEveryMove(WITHDRAWAL_STATES, WITHDRAWAL_MOVES.payout, REQUEST_MOVES, (f, t) => assertWithdrawalMove('payout', f, t)));
  describe('refund', () =>
    walkEveryMove(WITHDRAWAL_STATES, WITHDRAWAL_MOVES.refund, REFUND_MOVES, (f, t) => assertWithdrawalMove('refund', f, t)));

  it('stores every kind first as INTENT, never in another state', () => {
    for (const kind of PAID_KINDS) {
      expect(() => assertWithdrawalStart(kind, 'INTENT')).not.toThrow();
      for (const state of WITHDRAWAL_STATES.filter((s) => s !== 'INTENT'))
        expect(() => assertWithdrawalStart(kind, state)).toThrow(ForbiddenStateMove);
    }
  });

  it('says which aggregate and which move it refused', () => {
    expect(() => assertWithdrawalMove('payout', 'CONFIRMED', 'INTENT')).toThrow('payout state move CONFIRMED -> INTENT is not allowed');
  });
});
