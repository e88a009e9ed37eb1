import { DepositAddressDeriver } from '../../chain/hd-addresses.js';
import type { ChainReader } from '../../chain/reader.js';
import type { Clock } from '../../clock.js';
import type { PaymentsConfig } from '../../config/payments.js';
import type { ChainNetwork } from '../../domain/payments/chains.js';
import type { Store } from '../../store/db.js';
import type { PaidAdmissionGuard } from '../admissions/guard.js';
import { depositCountsByState, type DepositPosition, watchStates } from '../../store/deposits.js';
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
import type { DepositRecord } from './records.js';
import type { DepositResolutionInput, DepositResolutionResult } from './deposit-resolution.js';

/** A watched network as the store last recorded it (`ark-cp chain status`); null: the watcher has not run on it yet. */
export interface NetworkStatus {
  network: string;
  chainId: number;
  headBlock: bigint | null;
  finalizedBlock: bigint | null;
  cursorBlock: bigint | null;
  /** Blocks between the head and the cursor: how far the watcher is behind. */
  lagBlocks: bigint | null;
  finalityStalled: boolean | null;
  leaseOwner: string | null;
  leaseUntil: string | null;
  /** How many deposits are in each state. */
  deposits: Record<string, bigint>;
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
    history: (accountId: string, after: DepositPosition | null, fetch: number): Promise<DepositRecord[]> =>
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
          chainId: n.chainId,
          headBlock: s?.head_block ?? null,
          finalizedBlock: s?.finalized_block ?? null,
          cursorBlock: s?.cursor_block ?? null,
          lagBlocks: s?.head_block == null ? null : s.head_block > s.cursor_block ? s.head_block - s.cursor_block : 0n,
          finalityStalled: await storedFinalityStalled(deps, n.chainId),
          leaseOwner: s?.lease_owner ?? null,
          leaseUntil: s?.lease_until ?? null,
          deposits: counts,
        });
      }
      return out;
    },
  };
}

export type DepositServices = ReturnType<typeof buildDepositServices>;
