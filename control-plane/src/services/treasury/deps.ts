import type { ChainReader, Hex } from '../../chain/reader.js';
import type { Clock } from '../../clock.js';
import type { TreasuryConfig } from '../../config/treasury.js';
import type { ChainNetwork } from '../../domain/payments/chains.js';
import type { Store } from '../../store/db.js';
import type { AlertSink } from '../alerts/sink.js';

/** The chain side of the treasury, built once by the composition root (runtime.ts) from ARK_CHAINS and the key files. */
export interface TreasuryChain {
  /** The reader of a configured network (one per network, reused). */
  readerFor(network: ChainNetwork): ChainReader;
  /** The payout wallet's address (from ARK_PAYOUT_KEY_FILE); null without one. */
  payoutWalletAddress: Hex | null;
}

export interface TreasuryDeps {
  store: Store;
  clock: Clock;
  /** The watched networks (ARK_CHAINS); none: nothing to reconcile. */
  networks: readonly ChainNetwork[];
  settings: TreasuryConfig;
  /** Null: no chain is configured, and reconciliation refuses. */
  chain: TreasuryChain | null;
  alerts: AlertSink;
  logger?: { warn(obj: object, msg: string): void };
}
