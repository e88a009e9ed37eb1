import { statSync } from 'node:fs';

// The money-out part of the configuration (issue 12): the payout wallet and the automatic path's holds. Read once by
// loadConfig; a bad value stops the server with exit code 2 naming the variable.

export interface PayoutsConfig {
  /** ARK_PAYOUT_KEY_FILE: the payout wallet's private key (hex), mode 0600; null: nothing is paid (requests wait). */
  keyFile: string | null;
  /** ARK_WITHDRAWAL_REVIEW_ABOVE_MICRO: a request above this waits for an admin's review. */
  reviewAboveMicro: bigint;
  /** ARK_WITHDRAWAL_NEW_ADDRESS_HOLD_S: a request to an address added less than this ago waits for review. */
  newAddressHoldMs: number;
  /** ARK_WITHDRAWAL_DAILY_LIMIT_MICRO: past this much requested by one account in 24 h, requests wait for review. */
  dailyLimitMicro: bigint;
  /** ARK_WITHDRAWAL_REVIEW_FIRST: an account's first withdrawal or payout waits for review (1) or not (0). */
  reviewFirst: boolean;
  /** ARK_WITHDRAWAL_MIN_MICRO: the smallest request accepted (a transfer costs gas whatever its size). */
  minMicro: bigint;
  /** ARK_PAYOUT_POLL_INTERVAL_MS: how often the payer runs a step. */
  pollIntervalMs: number;
  /** ARK_PAYOUT_REPLACE_AFTER_S: a transaction unmined this long is replaced at the same nonce with a higher fee. */
  replaceAfterMs: number;
  /** ARK_PAYOUT_GAS_LIMIT: gas limit of one USDC transfer. */
  gasLimit: bigint;
  /** ARK_PAYOUT_MIN_NATIVE_WEI: below this much ETH for gas the wallet counts as lacking funds (alert, requests wait). */
  minNativeWei: bigint;
}

type Env = Record<string, string | undefined>;

export function payoutsConfigFrom(env: Env, fail: (message: string) => Error): PayoutsConfig {
  const micro = (name: string, fallback: bigint): bigint => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!/^(0|[1-9][0-9]{0,15})$/.test(raw)) throw fail(`${name} must be a whole number of micro-USDC up to 10^15, got "${raw}"`);
    return BigInt(raw);
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
      throw fail(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
    return Number(raw);
  };
  const keyFile = env.ARK_PAYOUT_KEY_FILE?.trim() || null;
  if (keyFile) {
    let mode: number;
    try {
      mode = statSync(keyFile).mode;
    } catch (error) {
      throw fail(`ARK_PAYOUT_KEY_FILE: cannot read ${keyFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
    if ((mode & 0o077) !== 0)
      throw fail(`ARK_PAYOUT_KEY_FILE: ${keyFile} must be readable by its owner only (chmod 600), it is ${(mode & 0o777).toString(8)}`);
  }
  const reviewFirst = env.ARK_WITHDRAWAL_REVIEW_FIRST ?? '1';
  if (reviewFirst !== '0' && reviewFirst !== '1') throw fail(`ARK_WITHDRAWAL_REVIEW_FIRST must be 0 or 1, got "${reviewFirst}"`);
  const minNative = env.ARK_PAYOUT_MIN_NATIVE_WEI;
  if (minNative !== undefined && minNative !== '' && !/^(0|[1-9][0-9]{0,30})$/.test(minNative))
    throw fail(`ARK_PAYOUT_MIN_NATIVE_WEI must be a whole number of wei, got "${minNative}"`);
  return {
    keyFile,
    reviewAboveMicro: micro('ARK_WITHDRAWAL_REVIEW_ABOVE_MICRO', 1_000_000_000n),
    newAddressHoldMs: int('ARK_WITHDRAWAL_NEW_ADDRESS_HOLD_S', 86_400, 0, 30 * 86_400) * 1000,
    dailyLimitMicro: micro('ARK_WITHDRAWAL_DAILY_LIMIT_MICRO', 5_000_000_000n),
    reviewFirst: reviewFirst === '1',
    minMicro: micro('ARK_WITHDRAWAL_MIN_MICRO', 1_000_000n),
    pollIntervalMs: int('ARK_PAYOUT_POLL_INTERVAL_MS', 5_000, 50, 600_000),
    replaceAfterMs: int('ARK_PAYOUT_REPLACE_AFTER_S', 180, 1, 86_400) * 1000,
    gasLimit: BigInt(int('ARK_PAYOUT_GAS_LIMIT', 100_000, 21_000, 1_000_000)),
    minNativeWei: minNative ? BigInt(minNative) : 100_000_000_000_000n,
  };
}
