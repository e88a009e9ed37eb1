import { describe } from 'vitest';
import { walkEveryMove } from '../../testing/moves.js';
import { assertDepositMove, DEPOSIT_MOVES, DEPOSIT_STATES } from './deposits.js';

// Every pair of a deposit's states: the moves services/billing/ and services/withdrawals/unlock.ts make pass, every
// other is refused (CREDITED and REFUNDED are final; nothing goes back to SEEN or BELOW_MINIMUM).

const ALLOWED = [
  'SEEN -> CREDITED',
  'SEEN -> HELD',
  'SEEN -> BELOW_MINIMUM',
  'BELOW_MINIMUM -> CREDITED',
  'BELOW_MINIMUM -> HELD',
  'HELD -> CREDITED',
  'HELD -> REFUNDING',
  'REFUNDING -> REFUNDED',
  'REFUNDING -> HELD',
];

describe('deposit moves', () => walkEveryMove(DEPOSIT_STATES, DEPOSIT_MOVES, ALLOWED, assertDepositMove));
