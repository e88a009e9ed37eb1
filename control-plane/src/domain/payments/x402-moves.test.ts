import { describe } from 'vitest';
import { walkEveryMove } from '../../testing/moves.js';
import { assertX402IntentMove, X402_INTENT_MOVES, X402_INTENT_STATES } from './x402.js';

// Every pair of an x402 intent's states: the moves services/billing/x402-settlement.ts makes pass, every other is
// refused (CONFIRMED, EXCEPTION and REFUSED are final; nothing is credited before PENDING_FINALITY).

const ALLOWED = [
  'VERIFIED -> SETTLING',
  'VERIFIED -> PENDING_FINALITY',
  'VERIFIED -> EXCEPTION',
  'VERIFIED -> REFUSED',
  'SETTLING -> PENDING_FINALITY',
  'SETTLING -> EXCEPTION',
  'PENDING_FINALITY -> SETTLING',
  'PENDING_FINALITY -> CONFIRMED',
];

describe('x402 intent moves', () => walkEveryMove(X402_INTENT_STATES, X402_INTENT_MOVES, ALLOWED, assertX402IntentMove));
