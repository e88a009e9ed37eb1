import { readFileSync } from 'node:fs';
import { checkAccountXpub, DepositXpubError } from '../chain/xpub.js';
import { type ChainsConfig, ChainsDocumentError, parseChainsDocument } from '../domain/payments/chains.js';

// The money-in part of the configuration (deposits; issue 8). Read once by loadConfig; a bad value stops the
// server with exit code 2 and a message naming the variable and, for ARK_CHAINS, the field.

export interface PaymentsConfig {
  /** ARK_CHAINS, parsed; null: no network is watched and deposit addresses answer 503. */
  chains: ChainsConfig | null;
  /** ARK_DEPOSIT_XPUB: the account-level extended public key (m/44'/60'/0'); null: deposit addresses answer 503. */
  depositXpub: string | null;
  /** ARK_BALANCE_CAP_MICRO: the most a renter's available balance may reach by deposits; null (0 in the environment): no cap. */
  balanceCapMicro: bigint | null;
  /** ARK_MIN_DEPOSIT_MICRO: smaller deposits are recorded, never credited. */
  minDepositMicro: bigint;
  /** ARK_PRICE_MAX_AGE_S: a native-coin price older than this (against the finalized block's time) is refused. */
  priceMaxAgeS: number;
  /** ARK_FINALITY_STALL_ALERT_S: a network whose finalized block has not advanced for this long raises the alert. */
  finalityStallAlertS: number;
  /** ARK_CHAIN_POLL_INTERVAL_MS: how often each network's watcher runs a step. */
  chainPollIntervalMs: number;
  /** ARK_CHAIN_MAX_BLOCKS: the most blocks one log query or block scan reads. */
  chainMaxBlocks: number;
}

type Env = Record<string, string | undefined>;

/** Readers of one variable each: the fallback when unset, else the value, or `fail` naming the variable. */
export function envReaders(env: Env, fail: (message: string) => Error) {
  return {
    micro(name: string, fallback: bigint): bigint {
      const raw = env[name];
      if (raw === undefined || raw === '') return fallback;
      if (!/^(0|[1-9][0-9]{0,15})$/.test(raw)) throw fail(`${name} must be a whole number of micro-USDC up to 10^15, got "${raw}"`);
      return BigInt(raw);
    },
    int(name: string, fallback: number, min: number, max: number): number {
      const raw = env[name];
      if (raw === undefined || raw === '') return fallback;
      if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
        throw fail(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return Number(raw);
    },
  };
}

export function paymentsConfigFrom(env: Env, fail: (message: string) => Error): PaymentsConfig {
  const { micro, int } = envReaders(env, fail);

  let chains: ChainsConfig | null = null;
  const chainsPath = env.ARK_CHAINS;
  if (chainsPath) {
    let text: string;
    try {
      text = readFileSync(chainsPath, 'utf8');
    } catch (error) {
      throw fail(`ARK_CHAINS: cannot read ${chainsPath} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (error) {
      throw fail(`ARK_CHAINS: ${chainsPath} is not JSON (${(error as Error).message})`);
    }
    try {
      chains = parseChainsDocument(doc);
    } catch (error) {
      if (error instanceof ChainsDocumentError) throw fail(`ARK_CHAINS: ${chainsPath}: ${error.message}`);
      throw error;
    }
  }

  const depositXpub = env.ARK_DEPOSIT_XPUB?.trim() || null;
  if (depositXpub) {
    try {
      // A light check (no viem, no bip32 loaded): every command loads the configuration, `--help` included.
      checkAccountXpub(depositXpub);
    } catch (error) {
      if (error instanceof DepositXpubError) throw fail(`ARK_DEPOSIT_XPUB ${error.message}`);
      throw error;
    }
  }

  const cap = micro('ARK_BALANCE_CAP_MICRO', 10_000_000_000n);
  return {
    chains,
    depositXpub,
    balanceCapMicro: cap === 0n ? null : cap,
    minDepositMicro: micro('ARK_MIN_DEPOSIT_MICRO', 1_000_000n),
    priceMaxAgeS: int('ARK_PRICE_MAX_AGE_S', 3600, 1, 7 * 86400),
    finalityStallAlertS: int('ARK_FINALITY_STALL_ALERT_S', 1800, 10, 7 * 86400),
    chainPollIntervalMs: int('ARK_CHAIN_POLL_INTERVAL_MS', 2000, 50, 600_000),
    chainMaxBlocks: int('ARK_CHAIN_MAX_BLOCKS', 500, 1, 10_000),
  };
}
