// The one switch for defects the simulator finds that are not fixed yet (issue 22). While a defect is listed here,
// the invariant it breaks is not checked (and only that one: every other invariant still is), so CI stays green on a
// tree that still has it. When its fix lands, its line goes: the simulator then holds the fix to its invariant on
// every run, and its scenario (scenarios.ts) becomes the fix's regression test.
//
// `pnpm sim --known-defects <keys>` skips exactly those, whatever this list says: that is how each defect was found
// (control-plane/src/sim/README.md has the seeds and shrunk sequences).

export const DEFECTS = {
  /**
   * Defect 1: POST /api/v1/withdrawals picks payout or withdrawal by the sign-up role, so a renter-role account that
   * hosts can never be paid its payable, and a host-role account can never withdraw what it deposited.
   * Invariant: "an account that earned payable can be paid it, and one that deposited can withdraw it, whatever role
   * it signed up with" (the drain takes out everything; stranded balances fail it).
   */
  'payout-by-role': 'defect 1: withdrawals and payouts chosen by the sign-up role, not by the balance drawn',
  /**
   * Defect 3, first part: a deposit over the balance cap stays HELD and every later deposit of the account waits
   * behind it. Invariant: "a deposit that fits the cap is credited after finality" (no HELD deposit fits at the end).
   */
  'deposit-blocked-by-held': 'defect 3: a deposit that fits the cap waits forever behind one that does not',
  /**
   * Defect 3, second part: deposits below the minimum are recorded and never credited, even once they add up to it.
   * Invariant: "deposits below the minimum are credited once their sum reaches it".
   */
  'deposit-below-minimum-sum': 'defect 3: deposits below the minimum never add up to a credit',
  /**
   * Defect 3, third part: a deposit over the cap has no way home (no operator credit, no refund). Invariant: "a HELD
   * deposit is credited by an operator's override or refunded to its sender, once". The operator's actions are the
   * hook in adapter.ts, to be filled when the fix lands.
   */
  'held-deposit-operator-path': 'defect 3: a deposit over the cap cannot be credited by an operator nor refunded',
  /**
   * Defect 4: a stopped job keeps the renter's unspent budget until CLOSED, an hour after STOPPED. Invariant: "a
   * stopped job's unspent budget is back in available within seconds of STOPPED, once its final receipt is settled".
   */
  'hold-until-closed': 'defect 4: the hold of a stopped job is released at CLOSED, not at STOPPED',
} as const;

export type DefectKey = keyof typeof DEFECTS;

/**
 * Defects not fixed on this tree: their invariants are skipped. Empty: issue 22's fixes of defects 1, 3 and 4 are
 * in. To watch the simulator find one again, undo its fix and add its key here (or run `--known-defects` without it).
 */
export const KNOWN_DEFECTS: ReadonlySet<DefectKey> = new Set<DefectKey>([]);

/** Parses `--known-defects`: `none`, `all` (this file's list) or keys separated by commas. */
export function parseKnownDefects(text: string): ReadonlySet<DefectKey> {
  if (text === 'all') return KNOWN_DEFECTS;
  if (text === 'none' || text === '') return new Set();
  const keys = text.split(',').map((k) => k.trim());
  for (const key of keys) if (!(key in DEFECTS)) throw new Error(`unknown defect "${key}"; known: ${Object.keys(DEFECTS).join(', ')}`);
  return new Set(keys as DefectKey[]);
}
