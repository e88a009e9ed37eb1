import { DepositAddressDeriver } from '../../chain/hd-addresses.js';
import type { ChainReader } from '../../chain/reader.js';
import type { Clock } from '../../clock.js';
import type { PaymentsConfig } from '../../config/payments.js';
import type { ChainNetwork } from '../../domain/payments/chains.js';
import type { Store } from '../../store/db.js';
import type { PaidAdmissionGuard } from '../admissions/guard.js';
import { depositCountsByState, type DepositPosition, type DepositRow, watchStates } from '../../store/deposits.js';
import { type ChainWatchEvents, ChainWatcher, storedFinalityStalled } from './chain-watch.js';
import { depositAddressOf, depositsConfigured } from './deposit-address.js';
import type { DepositState } from '../../domain/payments/deposits.js';
import type { KeysetPosition } from '../../store/keyset.js';
import type { CommitHook } from '../../store/transaction.js';
import { releaseHeldDeposits } from './deposit-credit.js';
import type { DepositDeps } from './deposit-deps.js';
import { depositHistory } from './deposit-history.js';
import { creditHeldDeposit } from './deposit-override.js';
import { depositsForOperators } from './deposit-queue.js';
import { refundHeldDeposit } from './deposit-refund.js';
import type { DepositResolutionInput, DepositResolutionResult } from './deposit-resolution.js';

export interface NetworkStatus {
  network: string;
  chain_id: number;
  head_block: string | null;
  finalized_block: string | null;
  cursor_block: string | null;
  /** Blocks between the head and the cursor: how far the watcher is behind. */
  lag_blocks: string | null;
  finality_stalled: boolean | null;
  lease_owner: string | null;
  lease_until: string | null;
  deposits: Record<string, string>;
}

/** Money in by deposit: the address view, the history, each network's watcher, and the operators' status. */
export function buildDepositServices(input: { store: Store; clock: Clock; payments: PaymentsConfig; admissions: PaidAdmissionGuard }) {
  const deps: DepositDeps = {
    ...input,
    deriver: input.payments.depositXpub ? new DepositAddressDeriver(input.payments.depositXpub) : null,
  };
  return {
    configured: () => depositsConfigured(deps),
    /** Credits the HELD deposits that fit and that admission lets in (a resume calls it at once). */
    releaseHeld: () => releaseHeldDeposits(deps),
    /** Null when deposits are not configured (the route answers 503). */
    address: (accountId: string) => depositAddressOf(deps, accountId),
    history: (accountId: string, after: DepositPosition | null, fetch: number): Promise<DepositRow[]> =>
      depositHistory(deps, accountId, after, fetch),
    /** The operators' queue: deposits in one state (HELD, BELOW_MINIMUM, REFUNDING, REFUNDED), oldest final first. */
    forOperators: (state: DepositState, after: KeysetPosition | null, fetch: number) => depositsForOperators(deps, state, after, fetch),
    /** An operator credits a HELD deposit over the cap (a recorded override). */
    credit: (input: DepositResolutionInput, commit?: CommitHook<DepositResolutionResult>) => creditHeldDeposit(deps, input, commit),
    /** An operator refunds a HELD deposit to its sender through the payout path. */
    refund: (input: DepositResolutionInput, commit?: CommitHook<DepositResolutionResult>) => refundHeldDeposit(deps, input, commit),
    /** The watched networks (empty without ARK_CHAINS). */
    networks: (): ChainNetwork[] => input.payments.chains?.networks ?? [],
    watcher: (network: ChainNetwork, reader: ChainReader, options: { owner?: string; events?: ChainWatchEvents } = {}) =>
      new ChainWatcher(deps, { network, reader, ...options }),
    /** Per watched network, as the store last recorded it. */
    async chainStatus(): Promise<NetworkStatus[]> {
      const states = await watchStates(input.store.db);
      const out: NetworkStatus[] = [];
      for (const n of input.payments.chains?.networks ?? []) {
        const s = states.find((row) => Number(row.chain_id) === n.chainId);
        const counts = await depositCountsByState(input.store.db, n.chainId);
        out.push({
          network: n.name,
          chain_id: n.chainId,
          head_block: s?.head_block?.toString() ?? null,
          finalized_block: s?.finalized_block?.toString() ?? null,
          cursor_block: s?.cursor_block.toString() ?? null,
          lag_blocks: s?.head_block == null ? null : (s.head_block > s.cursor_block ? s.head_block - s.cursor_block : 0n).toString(),
          finality_stalled: await storedFinalityStalled(deps, n.chainId),
          lease_owner: s?.lease_owner ?? null,
          lease_until: s?.lease_until ?? null,
          deposits: Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v.toString()])),
        });
      }
      return out;
    },
  };
}

export type DepositServices = ReturnType<typeof buildDepositServices>;
