import type { DepositAddress, DepositAsset, DepositNetwork } from '@ark/shared';
import { getAddress } from 'viem';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { roomUnderCap } from '../../domain/payments/deposits.js';
import { depositsOfAccount, ensureDepositAddress, watchStates } from '../../store/deposits.js';
import { balanceOf } from '../../store/ledger.js';
import { transact } from '../../store/transaction.js';
import type { DepositDeps } from './deposit-deps.js';
import { toDepositView } from './deposit-view.js';

/** Recent deposits shown with the address. */
const RECENT_DEPOSITS = 10;

/** Deposits are configured when both the networks and the xpub are. */
export function depositsConfigured(deps: DepositDeps): boolean {
  return deps.payments.chains !== null && deps.deriver !== null;
}

/**
 * The account's deposit address (created on first call, child 0/i of the xpub with i from the sequence), the
 * networks and assets it accepts, the bounds, and its recent deposits. Null when deposits are not configured.
 */
export async function depositAddressOf(deps: DepositDeps, accountId: string): Promise<DepositAddress | null> {
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
  const finalizedOf = (chainId: number): string | null => {
    const state = states.find((s) => Number(s.chain_id) === chainId);
    return state?.finalized_block == null ? null : state.finalized_block.toString();
  };
  const networks: DepositNetwork[] = chains.networks.map((n) => ({
    name: n.name,
    chain_id: n.chainId,
    assets: assetsOf(n),
    native: n.native ? { symbol: n.native.symbol, decimals: n.native.decimals, spread_bps: n.native.spreadBps } : null,
    finalized_block_number: finalizedOf(n.chainId),
  }));
  const room = roomUnderCap(available, deps.payments.balanceCapMicro);
  return {
    chain_id: 8453,
    network: 'base',
    // Stored lower-case (one spelling for lookups); shown checksummed (EIP-55), as wallets expect.
    address: getAddress(address),
    networks,
    assets: networks.flatMap((n) => n.assets),
    min_deposit_micro: deps.payments.minDepositMicro.toString(),
    max_deposit_micro: room === null ? null : room.toString(),
    finalized_block_number: finalizedOf(chains.networks[0]?.chainId ?? 8453),
    deposits: recent.map(toDepositView),
  };
}

function assetsOf(n: NonNullable<DepositDeps['payments']['chains']>['networks'][number]): DepositAsset[] {
  const tokens: DepositAsset[] = n.assets.map((a) => ({
    network: n.name,
    chain_id: n.chainId,
    symbol: a.symbol,
    kind: 'token',
    address: a.address,
    decimals: a.decimals,
  }));
  if (!n.native) return tokens;
  return [
    ...tokens,
    {
      network: n.name,
      chain_id: n.chainId,
      symbol: n.native.symbol,
      kind: 'native',
      address: null,
      decimals: n.native.decimals,
      spread_bps: n.native.spreadBps,
    },
  ];
}
