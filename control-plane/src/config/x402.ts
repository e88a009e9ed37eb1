import { readFileSync, statSync } from 'node:fs';
import { envReaders } from './payments.js';
import type { ChainsConfig } from '../domain/payments/chains.js';

// The x402 top-up part of the configuration (issue 8, item 3). Read once by loadConfig; a bad value stops the server
// with exit code 2 and a message naming the variable. The settlement key itself is never kept here (nor logged): only
// its file, checked now and read by the composition root when it builds the chain writer.

export interface X402Config {
  /** ARK_X402_ENABLED=true: the top-up route answers (otherwise 404). */
  enabled: boolean;
  /** ARK_TREASURY_ADDRESS (lower-case): where x402 payments are paid; null while disabled. */
  treasury: `0x${string}` | null;
  /** ARK_SETTLEMENT_KEY_FILE: the gas wallet's hex private key, mode 0600; null while disabled. */
  settlementKeyFile: string | null;
  /** ARK_TOPUP_MIN_MICRO / ARK_TOPUP_MAX_MICRO: the amounts one top-up may ask for. */
  minMicro: bigint;
  maxMicro: bigint;
  /** ARK_X402_MAX_TIMEOUT_S: `maxTimeoutSeconds` offered in the requirements (the authorization's validity window). */
  maxTimeoutS: number;
  /** ARK_X402_POLL_INTERVAL_MS: how often the settlement worker advances open top-ups. */
  pollIntervalMs: number;
}

type Env = Record<string, string | undefined>;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const PRIVATE_KEY = /^(0x)?[0-9a-fA-F]{64}$/;

export function x402ConfigFrom(env: Env, chains: ChainsConfig | null, fail: (message: string) => Error): X402Config {
  const { int, micro: anyMicro } = envReaders(env, fail);
  const micro = (name: string, fallback: bigint): bigint => {
    const value = anyMicro(name, fallback);
    if (value === 0n) throw fail(`${name} must be a positive number of micro-USDC`);
    return value;
  };
  const flag = env.ARK_X402_ENABLED ?? '';
  if (!['', 'true', 'false'].includes(flag)) throw fail(`ARK_X402_ENABLED must be true or false, got "${flag}"`);
  const enabled = flag === 'true';
  const minMicro = micro('ARK_TOPUP_MIN_MICRO', 1_000_000n);
  const maxMicro = micro('ARK_TOPUP_MAX_MICRO', 1_000_000_000n);
  if (maxMicro < minMicro) throw fail(`ARK_TOPUP_MAX_MICRO (${maxMicro}) must not be below ARK_TOPUP_MIN_MICRO (${minMicro})`);
  const base = {
    enabled,
    minMicro,
    maxMicro,
    maxTimeoutS: int('ARK_X402_MAX_TIMEOUT_S', 300, 30, 3600),
    pollIntervalMs: int('ARK_X402_POLL_INTERVAL_MS', 2000, 50, 600_000),
  };
  if (!enabled) return { ...base, treasury: null, settlementKeyFile: null };

  if (!chains) throw fail('ARK_X402_ENABLED=true needs ARK_CHAINS (the primary network base and its USDC)');
  if (!chains.networks[0]?.assets.some((a) => a.symbol === 'USDC'))
    throw fail('ARK_X402_ENABLED=true needs an asset with symbol USDC on the primary network in ARK_CHAINS');
  const treasury = env.ARK_TREASURY_ADDRESS?.trim() ?? '';
  if (!ADDRESS.test(treasury)) throw fail('ARK_TREASURY_ADDRESS must be a 0x-prefixed 20-byte hex address when ARK_X402_ENABLED=true');
  const keyFile = env.ARK_SETTLEMENT_KEY_FILE?.trim() || null;
  if (!keyFile) throw fail('ARK_SETTLEMENT_KEY_FILE must name the gas wallet key file when ARK_X402_ENABLED=true');
  let mode: number;
  let text: string;
  try {
    mode = statSync(keyFile).mode;
    text = readFileSync(keyFile, 'utf8');
  } catch (error) {
    throw fail(`ARK_SETTLEMENT_KEY_FILE: cannot read ${keyFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  if ((mode & 0o077) !== 0)
    throw fail(`ARK_SETTLEMENT_KEY_FILE: ${keyFile} must be readable by its owner only (chmod 600), it is ${(mode & 0o777).toString(8)}`);
  // The message names the file, never its content.
  if (!PRIVATE_KEY.test(text.trim())) throw fail(`ARK_SETTLEMENT_KEY_FILE: ${keyFile} must hold one hex private key (64 hex digits)`);
  return { ...base, treasury: treasury.toLowerCase() as `0x${string}`, settlementKeyFile: keyFile };
}

/** The gas wallet's key, read from its file when the composition root builds the chain writer (never logged). */
export function readSettlementKey(file: string): `0x${string}` {
  const text = readFileSync(file, 'utf8').trim();
  if (!PRIVATE_KEY.test(text)) throw new Error(`${file} does not hold one hex private key`);
  return (text.startsWith('0x') ? text : `0x${text}`) as `0x${string}`;
}
