import { nativeToMicro, type PriceReading, stablecoinToMicro } from '../payments/amounts.js';

// Reconciliation (issue 22): what the chain holds for us, per asset, against what the ledger owes. Pure: the caller
// reads the ledger and the chain and hands both in.
//
// The ledger counts in micro-USD, and every configured ERC-20 asset is a USD stablecoin credited 1:1 (USDC, USDT), so
// the stablecoins of every network, normalised to micro, are compared with the liabilities. A native coin (ETH) was
// converted to micro-USD at its deposit's price: the ledger owes dollars for it, not the coin. Native holdings are
// therefore reported apart, with their value at the oracle price as information only: they never count as backing,
// since their price moves and the payout path pays stablecoins.

/** Where the platform holds money on a network. */
export const HOLDING_PLACES = ['treasury', 'payout_wallet', 'deposit_addresses'] as const;
export type HoldingPlace = (typeof HOLDING_PLACES)[number];

/** What the ledger owes its accounts, from the cached balances. */
export interface Liabilities {
  availableMicro: bigint;
  heldMicro: bigint;
  /** Host earnings not matured yet (issue 24): owed as much as payable, only later. */
  pendingMicro: bigint;
  payableMicro: bigint;
  lockedMicro: bigint;
  /**
   * Locks of withdrawals and payouts already signed or broadcast: their transfer may be in the read block while the
   * payer has not yet seen it final and released the lock, so the chain may already show them paid.
   */
  inFlightMicro: bigint;
}

/** One asset's balances on one network, in its smallest unit, per place. */
export interface AssetHoldings {
  symbol: string;
  /** Lower-case ERC-20 address; null for the network's native coin. */
  token: `0x${string}` | null;
  decimals: number;
  byPlace: Record<HoldingPlace, bigint>;
}

/** One network's holdings at one finalized block. */
export interface NetworkHoldings {
  network: string;
  chainId: number;
  blockNumber: bigint;
  blockHash: `0x${string}`;
  /** The configured ERC-20 assets: USD stablecoins. */
  stablecoins: AssetHoldings[];
  native: AssetHoldings | null;
  /** The native coin's oracle price at the block; null when unread or unreadable (information only). */
  nativePrice: PriceReading | null;
}

export interface AssetLine extends AssetHoldings {
  totalRaw: bigint;
  /** The total in micro-USD: 1:1 for a stablecoin, at the oracle price (no spread) for a native coin, null without one. */
  valueMicro: bigint | null;
}

export interface NetworkLine {
  network: string;
  chainId: number;
  blockNumber: bigint;
  blockHash: `0x${string}`;
  stablecoins: AssetLine[];
  native: AssetLine | null;
}

export type ReconciliationStatus = 'balanced' | 'surplus' | 'deficit';

export interface Reconciliation {
  /** The ledger's unit, against which the stablecoins are compared. */
  asset: 'USD';
  liabilities: Liabilities & {
    /** available + held + payable + locked. */
    totalMicro: bigint;
    /** What must be on chain now: the total less what may already have left (in flight). */
    owedMicro: bigint;
  };
  /** Every network's stablecoins, normalised to micro-USD. */
  stablecoinsMicro: bigint;
  /** stablecoinsMicro - owedMicro: negative is a deficit. */
  surplusMicro: bigint;
  /** How much is missing (0 when nothing is). */
  deficitMicro: bigint;
  status: ReconciliationStatus;
  /** Native coins at the oracle price (information only); null when a native coin's price is unknown. */
  nativeValueMicro: bigint | null;
  networks: NetworkLine[];
}

const sumPlaces = (a: AssetHoldings): bigint => HOLDING_PLACES.reduce((sum, place) => sum + a.byPlace[place], 0n);

/** Compares the chain's holdings with the ledger's liabilities. */
export function reconcile(input: { liabilities: Liabilities; networks: NetworkHoldings[] }): Reconciliation {
  const l = input.liabilities;
  const totalMicro = l.availableMicro + l.heldMicro + l.pendingMicro + l.payableMicro + l.lockedMicro;
  // In flight is part of locked; it can never take the owed figure below the rest.
  let inFlight = l.inFlightMicro;
  if (inFlight > l.lockedMicro) inFlight = l.lockedMicro;
  const owedMicro = totalMicro - inFlight;

  let stablecoinsMicro = 0n;
  let nativeValueMicro: bigint | null = 0n;
  const networks: NetworkLine[] = input.networks.map((n) => {
    const stablecoins = n.stablecoins.map((a) => {
      const totalRaw = sumPlaces(a);
      // Rounded down once per asset, never per address: holdings are never overstated.
      const valueMicro = stablecoinToMicro(totalRaw, a.decimals);
      stablecoinsMicro += valueMicro;
      return { ...a, totalRaw, valueMicro };
    });
    let native: AssetLine | null = null;
    if (n.native) {
      const totalRaw = sumPlaces(n.native);
      const valueMicro =
        totalRaw === 0n
          ? 0n
          : n.nativePrice && n.nativePrice.answer > 0n
            ? nativeToMicro(totalRaw, n.native.decimals, n.nativePrice, 0)
            : null;
      nativeValueMicro = nativeValueMicro === null || valueMicro === null ? null : nativeValueMicro + valueMicro;
      native = { ...n.native, totalRaw, valueMicro };
    }
    return { network: n.network, chainId: n.chainId, blockNumber: n.blockNumber, blockHash: n.blockHash, stablecoins, native };
  });

  const surplusMicro = stablecoinsMicro - owedMicro;
  return {
    asset: 'USD',
    liabilities: { ...l, inFlightMicro: inFlight, totalMicro, owedMicro },
    stablecoinsMicro,
    surplusMicro,
    deficitMicro: surplusMicro < 0n ? -surplusMicro : 0n,
    status: surplusMicro < 0n ? 'deficit' : surplusMicro === 0n ? 'balanced' : 'surplus',
    nativeValueMicro,
    networks,
  };
}

/** The alert a deficit raises. */
export interface DeficitAlert {
  name: 'treasury_deficit';
  /** Always critical: native coins are not counted (they include the payout wallet's gas, and their price moves). */
  severity: 'critical';
  summary: string;
  details: Record<string, string | null>;
}

/** The alert for a deficit, or null when there is none. */
export function deficitAlert(report: Reconciliation): DeficitAlert | null {
  if (report.status !== 'deficit') return null;
  const usd = (micro: bigint) => `${micro / 1_000_000n}.${(micro % 1_000_000n).toString().padStart(6, '0')}`;
  return {
    name: 'treasury_deficit',
    severity: 'critical',
    summary:
      `The chain holds ${usd(report.stablecoinsMicro)} USD in stablecoins against ${usd(report.liabilities.owedMicro)} USD the ledger owes: ` +
      `${usd(report.deficitMicro)} USD missing.`,
    details: {
      deficit_micro: report.deficitMicro.toString(),
      stablecoins_micro: report.stablecoinsMicro.toString(),
      owed_micro: report.liabilities.owedMicro.toString(),
      in_flight_micro: report.liabilities.inFlightMicro.toString(),
      // Information only: what native coins would fetch at the oracle price.
      native_value_micro: report.nativeValueMicro?.toString() ?? null,
      blocks: report.networks.map((n) => `${n.network}@${n.blockNumber}`).join(','),
    },
  };
}

/**
 * Whether a deficit is alerted now: the first one, one that grew, or one that lasted past the repeat interval. A
 * worker that alerted every few minutes about the same shortfall would teach its readers to ignore it.
 */
export function shouldAlert(
  report: Reconciliation,
  last: { deficitMicro: bigint; atMs: number } | null,
  nowMs: number,
  repeatMs: number,
): boolean {
  if (report.status !== 'deficit') return false;
  if (last === null) return true;
  return report.deficitMicro > last.deficitMicro || nowMs - last.atMs >= repeatMs;
}
