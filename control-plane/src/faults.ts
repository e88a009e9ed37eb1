// Fault injection: a test facility, not a feature, and the only one in the server.
//
// The end-to-end suites that prove money moves exactly once across crashes (test/e2e/payouts-crash.test.ts,
// test/e2e/deposits.test.ts) need the real process to die at a precise point of its work, which no signal sent from
// outside can hit. Each such point is named here and reached through `Faults`; nothing else in the server stops its
// own process. Off unless ARK_FAULT_EXIT_AT is set, and refused at start (exit code 2) with NODE_ENV=production, so a
// deployment cannot carry it by mistake.

/** Every named point, where it is reached. */
export const FAULT_POINTS = [
  // services/withdrawals/payer.ts: after the nonce and signed transaction are stored, before the broadcast.
  'payout.pinned',
  // services/withdrawals/payer.ts: after the broadcast, before it is recorded or confirmed.
  'payout.broadcast',
  // services/jobs/credit.ts: a failed job's automatic credit is posted, its transaction (the move to FAILED) not yet
  // committed.
  'job.credit',
] as const;

export type FaultPoint = (typeof FAULT_POINTS)[number];

export interface FaultsConfig {
  /** ARK_FAULT_EXIT_AT: the process kills itself with SIGKILL the first time it reaches this point; null: never. */
  exitAt: FaultPoint | null;
}

type Env = Record<string, string | undefined>;

/** Read by loadConfig (config/index.ts) with every other variable; a bad value, or any value in production, stops the start. */
export function faultsConfigFrom(env: Env, fail: (message: string) => Error): FaultsConfig {
  const exitAt = env.ARK_FAULT_EXIT_AT?.trim() || null;
  if (exitAt === null) return { exitAt: null };
  if (env.NODE_ENV === 'production')
    throw fail('ARK_FAULT_EXIT_AT is a test facility (faults.ts) and is refused with NODE_ENV=production: unset it');
  if (!(FAULT_POINTS as readonly string[]).includes(exitAt))
    throw fail(`ARK_FAULT_EXIT_AT must be one of ${FAULT_POINTS.join(', ')}, got "${exitAt}"`);
  return { exitAt: exitAt as FaultPoint };
}

/** The seam: code at a named point says it got there; only a test's configuration makes anything happen. */
export interface Faults {
  reached(point: FaultPoint): void;
}

/** What every process runs with unless a test asked for a fault. */
export const noFaults: Faults = { reached() {} };

/**
 * The faults a configuration asks for (built once by runtime.ts). `exit` is how the process dies: SIGKILL to itself,
 * so nothing (no finally, no shutdown hook, no flush) runs after the point, as in a power cut.
 */
export function faultsOf(config: FaultsConfig, exit: () => void = () => process.kill(process.pid, 'SIGKILL')): Faults {
  const { exitAt } = config;
  if (exitAt === null) return noFaults;
  return {
    reached(point) {
      if (point === exitAt) exit();
    },
  };
}
