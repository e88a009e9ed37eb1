import type { X402Chain } from '../../chain/x402-chain.js';
import type { Clock } from '../../clock.js';
import type { PaymentsConfig } from '../../config/payments.js';
import type { X402Config } from '../../config/x402.js';
import type { Hex } from '../../domain/payments/x402.js';
import type { Store, Tx } from '../../store/db.js';

export interface X402Deps {
  store: Store;
  clock: Clock;
  x402: X402Config;
  payments: PaymentsConfig;
  /** The primary network's settlement side; null when the composition root built none (the route answers 503). */
  chain: X402Chain | null;
  /** The primary network (chain 8453) and its USDC; null while x402 is disabled. */
  network: { chainId: number; name: string; usdc: Hex } | null;
  /** Where the resource is announced (the 402's `resource.url`). */
  publicBaseUrl: string;
  /** The paid-admission guard, asked in the transaction that persists a new top-up (throws 503 while paused). */
  admit?: (trx: Tx, request: { accountId: string; reference: string }) => Promise<unknown>;
  /**
   * Whether paid admission is open now (read without a lock): a paused market answers 503 ADMISSIONS_PAUSED before it
   * asks for a payment or reads the chain, instead of a 402 it would refuse once paid. `admit` stays the decision.
   */
  admissionOpen?: () => Promise<boolean>;
  logger?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

/** The primary network and its USDC from ARK_CHAINS, once x402 is enabled (config-x402.ts checked both exist). */
export function x402NetworkOf(x402: X402Config, payments: PaymentsConfig): X402Deps['network'] {
  const primary = payments.chains?.networks[0];
  const usdc = primary?.assets.find((a) => a.symbol === 'USDC');
  if (!x402.enabled || !primary || !usdc) return null;
  return { chainId: primary.chainId, name: primary.name, usdc: usdc.address };
}
