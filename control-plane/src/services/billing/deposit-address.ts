import { getAddress } from 'viem';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import type { ChainNetwork } from '../../domain/payments/chains.js';
import { roomUnderCap } from '../../domain/payments/deposits.js';
import { depositsOfAccount, ensureDepositAddress, watchStates } from '../../store/deposits.js';
import { balanceOf } from '../../store/ledger.js';
import { transact } from '../../store/transaction.js';
import type { DepositDeps } from './deposit-deps.js';
import { type DepositRecord, toDepositRecord } from './records.js';

/** Recent deposits shown with the address. */
const RECENT_DEPOSITS = 10;

/** Deposits are configured when both the networks and the xpub are. */
export function depositsConfigured(deps: DepositDeps): boolean {
  return deps.payments.chains !== null && deps.deriver !== null;
}

/** An account's deposit address and what it takes: the renter's view of it is `depositAddressView` (views/deposits.ts). */
export interface DepositAddressRecord {
  /** Checksummed (EIP-55), as wallets expect; stored lower-case. */
  address: string;
  /** The watched networks (the primary first), each with the last block the watcher saw finalized. */
  networks: Array<{ network: Pick<ChainNetwork, 'name' | 'chainId' | 'assets' | 'native'>; finalizedBlock: bigint | null }>;
  /** The primary network's finalized block. */
  finalizedBlock: bigint | null;
  minDepositMicro: bigint;
  /** What the account may still deposit under the balance cap; null without a cap. */
  roomMicro: bigint | null;
  /** The account's newest deposits. */
  recent: DepositRecord[];
}

/**
 * The account's deposit address (created on first call, child 0/i of the xpub with i from the sequence), the
 * networks and assets it accepts, the bounds, and its recent deposits. Null when deposits are not configured.
 */
export async function depositAddressOf(deps: DepositDeps, accountId: string): Promise<DepositAddressRecord | null> {
  const { chains } = deps.payments;
  const deriver = deps.deriver;
  if (chains === null || deriver === null) return null;
  const { address } = await transact(deps.store, (trx) =>
    ensureDepositAddress(trx, accountId, (index) => deriver.addressAt(index), deps.clock.now()),
  );
  const [states, available, recent] = await Promise.all([
    watchStates(deps.store.db),
    balanceOf(deps.store.db, ledgerAccounts.available(accountId)),
    depositsOfAccount(deps.store.db, accountId, null, RECENT_DEPOSITS),
  ]);
  const finalizedOf = (chainId: number): bigint | null => {
    const state = states.find((s) => Number(s.chain_id) === chainId);
    return state?.finalized_block == null ? null : state.finalized_block;
  };
  return {
    address: getAddress(address),
    networks: chains.networks.map((network) => ({ network, finalizedBlock: finalizedOf(network.chainId) })),
    finalizedBlock: finalizedOf(chains.networks[0]?.chainId ?? 8453),
    minDepositMicro: deps.payments.minDepositMicro,
    roomMicro: roomUnderCap(available, deps.payments.balanceCapMicro),
    recent: recent.map(toDepositRecord),
  };
}
