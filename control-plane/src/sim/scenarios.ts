import { command, NOBODY, type Population, type SimCommand } from './commands.js';
import type { DefectKey } from './known-defects.js';

// One short, hand-written sequence per defect the simulator was built to find (issue 22), shaped like the shrunk
// sequences it printed. While a defect is listed in known-defects.ts its scenario must still break its invariant
// (so the list never keeps a fixed defect); once it is not, the scenario must pass (a regression test of the fix).

const USDC = 1_000_000n;

export interface DefectScenario {
  population: Population;
  commands: () => SimCommand[];
}

export const DEFECT_SCENARIOS: Record<DefectKey, DefectScenario> = {
  // A renter-role account hosts a machine, another renter rents it for a minute: the host earned payable it cannot
  // be paid (its request becomes a withdrawal from available).
  'payout-by-role': {
    population: { ...NOBODY, renterHosts: 1, renters: 1 },
    commands: () => [command.reserve(1, 0, 3600, null), command.tick(60_000)],
  },
  // A deposit over the cap, then one that fits: the second waits behind the first forever.
  'deposit-blocked-by-held': {
    population: NOBODY,
    commands: () => [command.signUp('renter'), command.deposit(0, 101n * USDC), command.deposit(0, 1n * USDC)],
  },
  // Two deposits below the minimum that add up to more than it.
  'deposit-below-minimum-sum': {
    population: NOBODY,
    commands: () => [command.signUp('renter'), command.deposit(0, 400_000n), command.deposit(0, 700_000n)],
  },
  // Two deposits over the cap: no operator can credit or refund them (the drain's operator refunds one, by its odd
  // amount, and credits the other).
  'held-deposit-operator-path': {
    population: NOBODY,
    commands: () => [command.signUp('renter'), command.deposit(0, 101n * USDC), command.deposit(0, 120n * USDC)],
  },
  // A job runs a minute and is stopped: its unspent budget stays held until CLOSED, an hour later.
  'hold-until-closed': {
    population: { ...NOBODY, hosts: 1, renters: 1 },
    commands: () => [command.reserve(1, 0, 3600, null), command.tick(60_000)],
  },
};
