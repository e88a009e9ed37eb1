import { envReaders } from './payments.js';

// The treasury part of the configuration (issue 22): where the platform keeps its money, and how often and how the
// reconciliation reads the chain. Read once by loadConfig; a bad value stops the server with exit code 2.

/** Multicall3's address on every chain it was deployed to with its keyless deployment (Base included). */
export const CANONICAL_MULTICALL3 = '0xca11bde05977b3631167028862be2a173976ca11';

export interface TreasuryConfig {
  /** ARK_TREASURY_ADDRESS (lower-case): where swept deposits and x402 payments go; null: none is read. */
  address: `0x${string}` | null;
  /** ARK_MULTICALL_ADDRESS: Multicall3 on every watched network (default: its canonical address). */
  multicallAddress: `0x${string}`;
  /** ARK_MULTICALL_BATCH_CALLS: balance reads in one Multicall3 call. */
  multicallBatchCalls: number;
  /** ARK_RECONCILE_INTERVAL_MS: how often the worker reconciles the chain with the ledger. */
  reconcileIntervalMs: number;
  /** ARK_RECONCILE_ALERT_REPEAT_S: a deficit that neither grew nor went away is alerted again after this long. */
  alertRepeatMs: number;
}

type Env = Record<string, string | undefined>;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export function treasuryConfigFrom(env: Env, fail: (message: string) => Error): TreasuryConfig {
  const { int } = envReaders(env, fail);
  const address = (name: string): `0x${string}` | null => {
    const raw = env[name]?.trim() ?? '';
    if (raw === '') return null;
    if (!ADDRESS.test(raw)) throw fail(`${name} must be a 0x-prefixed 20-byte hex address, got "${raw}"`);
    return raw.toLowerCase() as `0x${string}`;
  };
  return {
    address: address('ARK_TREASURY_ADDRESS'),
    multicallAddress: address('ARK_MULTICALL_ADDRESS') ?? CANONICAL_MULTICALL3,
    multicallBatchCalls: int('ARK_MULTICALL_BATCH_CALLS', 500, 1, 2_000),
    reconcileIntervalMs: int('ARK_RECONCILE_INTERVAL_MS', 300_000, 100, 86_400_000),
    alertRepeatMs: int('ARK_RECONCILE_ALERT_REPEAT_S', 3_600, 60, 7 * 86_400) * 1000,
  };
}
