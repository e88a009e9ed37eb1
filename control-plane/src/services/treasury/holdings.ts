import type { ChainReader, Hex } from '../../chain/reader.js';
import type { AssetHoldings, HoldingPlace, NetworkHoldings } from '../../domain/reconciliation/compare.js';
import type { PriceReading } from '../../domain/payments/amounts.js';
import type { ChainNetwork } from '../../domain/payments/chains.js';
import { stateUnavailable } from '../../errors.js';
import { depositAddressesAfter } from '../../store/deposits.js';
import { payoutWalletAddresses } from '../../store/treasury.js';
import type { TreasuryChain, TreasuryDeps } from './deps.js';

/** Deposit addresses read per page from the store. */
const ADDRESS_PAGE = 5_000;
/** The most deposit addresses one run reads (a limit on everything: 20 pages of 50,000). */
export const MAX_DEPOSIT_ADDRESSES = 1_000_000;

/** Every address the platform holds money at, each once, with its place (treasury first, then the payout wallet). */
export interface Owners {
  addresses: Hex[];
  places: HoldingPlace[];
  /** Derivation index of each deposit address (null for the others). */
  indexes: (bigint | null)[];
  depositAddresses: number;
}

export function requireChain(deps: TreasuryDeps): TreasuryChain {
  if (deps.chain === null || deps.networks.length === 0)
    throw stateUnavailable('no chain is configured (ARK_CHAINS): nothing to reconcile');
  return deps.chain;
}

/** The treasury (ARK_TREASURY_ADDRESS), the payout wallet(s) and every deposit address in the store. */
export async function loadOwners(deps: TreasuryDeps, chain: TreasuryChain): Promise<Owners> {
  const owners: Owners = { addresses: [], places: [], indexes: [], depositAddresses: 0 };
  const seen = new Set<string>();
  const add = (address: string, place: HoldingPlace, index: bigint | null) => {
    const lower = address.toLowerCase();
    if (seen.has(lower)) return;
    seen.add(lower);
    owners.addresses.push(lower as Hex);
    owners.places.push(place);
    owners.indexes.push(index);
    if (place === 'deposit_addresses') owners.depositAddresses += 1;
  };
  if (deps.settings.address) add(deps.settings.address, 'treasury', null);
  if (chain.payoutWalletAddress) add(chain.payoutWalletAddress, 'payout_wallet', null);
  for (const address of await payoutWalletAddresses(deps.store.db)) add(address, 'payout_wallet', null);
  let after = -1n;
  for (;;) {
    const page = await depositAddressesAfter(deps.store.db, after, ADDRESS_PAGE);
    for (const row of page) add(row.address, 'deposit_addresses', row.index);
    if (page.length < ADDRESS_PAGE) break;
    after = (page[page.length - 1] as { index: bigint }).index;
    if (owners.depositAddresses >= MAX_DEPOSIT_ADDRESSES)
      throw new Error(`more than ${MAX_DEPOSIT_ADDRESSES} deposit addresses: raise the limit`);
  }
  return owners;
}

export interface NetworkRead extends NetworkHoldings {
  /** Per owner (as in Owners), per stablecoin: the balances, for the sweep plan. */
  tokenBalances: bigint[][];
  nativeBalances: bigint[] | null;
  multicalls: number;
}

/**
 * One network's holdings at its finalized block: the chain id checked first (a wrong RPC URL must not read another
 * chain's balances as ours), every balance read at that one block, the native coin's price read there too.
 */
export async function readNetwork(reader: ChainReader, network: ChainNetwork, owners: Owners): Promise<NetworkRead> {
  const chainId = await reader.chainId();
  if (chainId !== network.chainId)
    throw new Error(`network ${network.name}: the RPC answers chain id ${chainId}, configured ${network.chainId}`);
  const { finalized } = await reader.heads();
  const tokens = network.assets.map((a) => a.address);
  const read = await reader.holdings({ owners: owners.addresses, tokens, native: network.native !== null, blockNumber: finalized.number });
  const byPlace = (balances: readonly bigint[]): Record<HoldingPlace, bigint> => {
    const sums: Record<HoldingPlace, bigint> = { treasury: 0n, payout_wallet: 0n, deposit_addresses: 0n };
    balances.forEach((balance, i) => {
      const place = owners.places[i] as HoldingPlace;
      sums[place] += balance;
    });
    return sums;
  };
  const stablecoins: AssetHoldings[] = network.assets.map((a, j) => ({
    symbol: a.symbol,
    token: a.address,
    decimals: a.decimals,
    byPlace: byPlace(read.tokenBalances[j] ?? []),
  }));
  let native: AssetHoldings | null = null;
  let nativePrice: PriceReading | null = null;
  if (network.native && read.nativeBalances) {
    native = { symbol: network.native.symbol, token: null, decimals: network.native.decimals, byPlace: byPlace(read.nativeBalances) };
    // Information only: an unreadable feed leaves the value unknown, never fails the reconciliation.
    nativePrice = await reader.price(network.native.priceFeed, finalized.number).catch(() => null);
  }
  return {
    network: network.name,
    chainId: network.chainId,
    blockNumber: finalized.number,
    blockHash: finalized.hash,
    stablecoins,
    native,
    nativePrice,
    tokenBalances: read.tokenBalances,
    nativeBalances: read.nativeBalances,
    multicalls: read.multicalls,
  };
}
