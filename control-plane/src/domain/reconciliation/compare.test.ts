import { describe, expect, it } from 'vitest';
import { type AssetHoldings, deficitAlert, type Liabilities, type NetworkHoldings, reconcile, shouldAlert } from './compare.js';
import { planSweep } from './sweep-plan.js';

const USDC = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const USDT = '0xfde4c96c8593536e31f229ea8f37b2ada2699bb2';
const HASH = `0x${'ab'.repeat(32)}` as const;
/** 3000.00000000 USD per ETH, as Chainlink's ETH/USD answers (8 decimals). */
const ETH_PRICE = { answer: 300_000_000_000n, feedDecimals: 8, updatedAtS: 1_700_000_000n };

const liabilities = (over: Partial<Liabilities> = {}): Liabilities => ({
  availableMicro: 40_000_000n,
  heldMicro: 5_000_000n,
  pendingMicro: 0n,
  payableMicro: 3_000_000n,
  lockedMicro: 2_000_000n,
  inFlightMicro: 0n,
  ...over,
});

const asset = (
  symbol: string,
  token: `0x${string}` | null,
  decimals: number,
  treasury: bigint,
  payout: bigint,
  deposits: bigint,
): AssetHoldings => ({
  symbol,
  token,
  decimals,
  byPlace: { treasury, payout_wallet: payout, deposit_addresses: deposits },
});

const base = (over: Partial<NetworkHoldings> = {}): NetworkHoldings => ({
  network: 'base',
  chainId: 8453,
  blockNumber: 100n,
  blockHash: HASH,
  // 30 USDC in the treasury, 10 in the payout wallet, 6 on deposit addresses; 4 USDT (18 decimals) on deposit addresses.
  stablecoins: [asset('USDC', USDC, 6, 30_000_000n, 10_000_000n, 6_000_000n), asset('USDT', USDT, 18, 0n, 0n, 4n * 10n ** 18n)],
  native: asset('ETH', null, 18, 0n, 10n ** 18n / 10n, 10n ** 18n / 1000n),
  nativePrice: ETH_PRICE,
  ...over,
});

describe('reconciliation of the chain with the ledger', () => {
  it('owes available + held + payable + locked and counts every stablecoin, normalised to micro, from every place', () => {
    const report = reconcile({ liabilities: liabilities(), networks: [base()] });
    expect(report.liabilities.totalMicro).toBe(50_000_000n);
    expect(report.liabilities.owedMicro).toBe(50_000_000n);
    expect(report.stablecoinsMicro).toBe(46_000_000n + 4_000_000n);
    expect(report.surplusMicro).toBe(0n);
    expect(report.status).toBe('balanced');
    expect(report.deficitMicro).toBe(0n);
    expect(deficitAlert(report)).toBeNull();
    const [usdc, usdt] = report.networks[0]?.stablecoins ?? [];
    expect(usdc).toMatchObject({ totalRaw: 46_000_000n, valueMicro: 46_000_000n });
    expect(usdt).toMatchObject({ totalRaw: 4n * 10n ** 18n, valueMicro: 4_000_000n });
  });

  it('owes pending host earnings as much as payable ones (issue 24): moving pending to payable changes nothing owed', () => {
    const pending = reconcile({ liabilities: liabilities({ pendingMicro: 1_000_000n, payableMicro: 2_000_000n }), networks: [base()] });
    const matured = reconcile({ liabilities: liabilities({ pendingMicro: 0n, payableMicro: 3_000_000n }), networks: [base()] });
    expect(pending.liabilities.owedMicro).toBe(50_000_000n);
    expect(matured.liabilities.owedMicro).toBe(50_000_000n);
    expect(pending.status).toBe('balanced');
    const short = reconcile({ liabilities: liabilities({ pendingMicro: 1_000_000n }), networks: [base()] });
    expect(short.deficitMicro).toBe(1_000_000n);
  });

  it('reports native coins apart, valued at the oracle price, never counted against what is owed', () => {
    const report = reconcile({ liabilities: liabilities({ availableMicro: 340_000_000n }), networks: [base()] });
    // 0.101 ETH at 3000 USD: 303 USD, which would more than cover the 300 USD missing, yet the report is a deficit.
    expect(report.networks[0]?.native).toMatchObject({ totalRaw: 101n * 10n ** 15n, valueMicro: 303_000_000n });
    expect(report.nativeValueMicro).toBe(303_000_000n);
    expect(report.surplusMicro).toBe(-300_000_000n);
    expect(report.status).toBe('deficit');
    expect(report.deficitMicro).toBe(300_000_000n);
    expect(deficitAlert(report)).toMatchObject({
      name: 'treasury_deficit',
      severity: 'critical',
      details: { deficit_micro: '300000000', native_value_micro: '303000000' },
    });
    // Without a price the value is unknown; the stablecoin figures are the same.
    const unpriced = reconcile({ liabilities: liabilities({ availableMicro: 340_000_000n }), networks: [base({ nativePrice: null })] });
    expect(unpriced.nativeValueMicro).toBeNull();
    expect(unpriced.deficitMicro).toBe(300_000_000n);
  });

  it('finds the deficit when treasury funds left behind the ledger’s back, and alerts critically', () => {
    const drained = base({ stablecoins: [asset('USDC', USDC, 6, 5_000_000n, 10_000_000n, 6_000_000n)], native: null, nativePrice: null });
    const report = reconcile({ liabilities: liabilities(), networks: [drained] });
    expect(report.stablecoinsMicro).toBe(21_000_000n);
    expect(report.surplusMicro).toBe(-29_000_000n);
    expect(report.status).toBe('deficit');
    const alert = deficitAlert(report);
    expect(alert).toMatchObject({
      severity: 'critical',
      details: { deficit_micro: '29000000', owed_micro: '50000000', blocks: 'base@100' },
    });
    expect(alert?.summary).toContain('29.000000 USD missing');
  });

  it('does not count transfers in flight as owed (the chain may show them paid), but never more than is locked', () => {
    // A 2 USDC payout was broadcast and is in the read block: the payout wallet already lacks it, the lock remains.
    const paid = base({
      stablecoins: [asset('USDC', USDC, 6, 30_000_000n, 8_000_000n, 6_000_000n), asset('USDT', USDT, 18, 0n, 0n, 4n * 10n ** 18n)],
    });
    expect(reconcile({ liabilities: liabilities(), networks: [paid] }).status).toBe('deficit');
    const inFlight = reconcile({ liabilities: liabilities({ inFlightMicro: 2_000_000n }), networks: [paid] });
    expect(inFlight.liabilities.owedMicro).toBe(48_000_000n);
    expect(inFlight.status).toBe('balanced');
    expect(reconcile({ liabilities: liabilities({ inFlightMicro: 9_000_000n }), networks: [paid] }).liabilities.owedMicro).toBe(
      48_000_000n,
    );
  });

  it('sums every network, rounding each asset down once, never each address', () => {
    const other = base({
      network: 'bsc',
      chainId: 56,
      // 1.9999999 micro of an 18-decimal token across places: one micro after rounding the total, not zero per place.
      stablecoins: [asset('USDT', USDT, 18, 999_999_999_999n, 1_000_000_000_000n, 0n)],
      native: null,
      nativePrice: null,
    });
    const report = reconcile({ liabilities: liabilities({ availableMicro: 40_000_001n }), networks: [base(), other] });
    expect(report.stablecoinsMicro).toBe(50_000_001n);
    expect(report.status).toBe('balanced');
    expect(report.networks.map((n) => n.network)).toEqual(['base', 'bsc']);
  });

  it('alerts the first deficit, one that grew, and one that lasted past the repeat interval; nothing else', () => {
    const deficit = (micro: bigint) =>
      reconcile({ liabilities: liabilities({ availableMicro: 40_000_000n + micro }), networks: [base({ native: null })] });
    const hour = 3_600_000;
    expect(shouldAlert(deficit(1n), null, 0, hour)).toBe(true);
    expect(shouldAlert(deficit(1n), { deficitMicro: 1n, atMs: 0 }, hour - 1, hour)).toBe(false);
    expect(shouldAlert(deficit(2n), { deficitMicro: 1n, atMs: 0 }, 1, hour)).toBe(true);
    expect(shouldAlert(deficit(1n), { deficitMicro: 1n, atMs: 0 }, hour, hour)).toBe(true);
    expect(shouldAlert(deficit(0n), null, 0, hour)).toBe(false);
  });
});

describe('the sweep plan', () => {
  const TREASURY = '0x1111111111111111111111111111111111111111';
  const addresses = [
    { index: 0n, address: '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' as const },
    { index: 7n, address: '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' as const },
  ];
  let n = 0;
  const plan = () =>
    planSweep({
      network: 'base',
      chainId: 8453,
      blockNumber: 100n,
      treasury: TREASURY,
      addresses,
      stablecoins: [
        { symbol: 'USDC', token: USDC, decimals: 6, authorization: { name: 'USD Coin', version: '2' }, balances: [5_000_000n, 999_999n] },
        { symbol: 'USDT', token: USDT, decimals: 18, authorization: null, balances: [0n, 3n * 10n ** 18n] },
      ],
      native: { symbol: 'ETH', token: null, decimals: 18, authorization: null, balances: [10n ** 12n, 10n ** 16n] },
      nativePrice: ETH_PRICE,
      minMicro: 1_000_000n,
      validBeforeS: 1_800_000_000n,
      nonce: () => `0x${(++n).toString(16).padStart(64, '0')}`,
    });

  it('signs USDC by EIP-3009 authorization from each deposit address’s path, to the treasury, for the gas wallet to send', () => {
    const p = plan();
    const usdc = p.transfers.filter((t) => t.asset === 'USDC');
    // 0.999999 USDC is below the 1 USDC minimum: left where it is.
    expect(usdc).toHaveLength(1);
    expect(usdc[0]).toMatchObject({
      method: 'transferWithAuthorization',
      derivation_path: "m/44'/60'/0'/0/0",
      from: addresses[0]?.address,
      to: TREASURY,
      amount_raw: 5_000_000n,
      sender: 'gas_wallet',
      typed_data: {
        domain: { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: USDC },
        primaryType: 'TransferWithAuthorization',
        message: { from: addresses[0]?.address, to: TREASURY, value: 5_000_000n, validAfter: 0n, validBefore: 1_800_000_000n },
      },
    });
  });

  it('plans a plain transfer for a token without EIP-3009 and the native coin, and gives every authorization its own nonce', () => {
    const p = plan();
    expect(p.transfers.find((t) => t.asset === 'USDT')).toMatchObject({
      method: 'transfer',
      derivation_path: "m/44'/60'/0'/0/7",
      amount_raw: 3n * 10n ** 18n,
      amount_micro: 3_000_000n,
      sender: 'deposit_address',
    });
    // 10^12 wei is 0.003 USD: dust; 0.01 ETH is 30 USD.
    const eth = p.transfers.filter((t) => t.asset === 'ETH');
    expect(eth).toEqual([expect.objectContaining({ method: 'native_transfer', balance_raw: 10n ** 16n, value_micro: 30_000_000n })]);
    expect(p.totals).toEqual([
      { asset: 'USDC', token: USDC, amount_raw: 5_000_000n, transfers: 1 },
      { asset: 'USDT', token: USDT, amount_raw: 3n * 10n ** 18n, transfers: 1 },
      { asset: 'ETH', token: null, amount_raw: 10n ** 16n, transfers: 1 },
    ]);
    const nonces = [plan(), plan()].flatMap((q) =>
      q.transfers.flatMap((t) => (t.method === 'transferWithAuthorization' ? [t.typed_data.message.nonce] : [])),
    );
    expect(new Set(nonces).size).toBe(nonces.length);
  });
});
