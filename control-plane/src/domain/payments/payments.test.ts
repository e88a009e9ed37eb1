import { describe, expect, it } from 'vitest';
import { nativeToMicro, priceRefusal, stablecoinToMicro } from './amounts.js';
import { ChainsDocumentError, parseChainsDocument } from './chains.js';
import {
  chainCreditRef,
  decideFinalDeposit,
  depositMoneyRef,
  exceedsBalanceCap,
  heldDepositFits,
  largestReleasable,
  NATIVE_LOG_INDEX,
  refundRefusal,
  roomUnderCap,
} from './deposits.js';
import { finalityStalled, nextRange, rewindTo } from './scanning.js';

const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const base = {
  name: 'base',
  chain_id: 8453,
  rpc_url: 'http://127.0.0.1:8545',
  assets: [{ symbol: 'USDC', address: USDC, decimals: 6 }],
  native: { symbol: 'ETH', decimals: 18, price_feed: `0x${'1'.repeat(40)}`, spread_bps: 100 },
};

function fieldOf(doc: unknown): string {
  try {
    parseChainsDocument(doc);
  } catch (error) {
    if (error instanceof ChainsDocumentError) return error.field;
    throw error;
  }
  return '(valid)';
}

describe('ARK_CHAINS document', () => {
  it('parses the shape of the issue, addresses lower-cased, the primary first', () => {
    const config = parseChainsDocument({ networks: [base, { ...base, name: 'bsc', chain_id: 56, native: null }] });
    expect(config.networks[0]).toEqual({
      name: 'base',
      chainId: 8453,
      rpcUrl: 'http://127.0.0.1:8545',
      assets: [{ symbol: 'USDC', address: USDC.toLowerCase(), decimals: 6 }],
      native: { symbol: 'ETH', decimals: 18, priceFeed: `0x${'1'.repeat(40)}`, spreadBps: 100 },
    });
    expect(config.networks[1]?.native).toBeNull();
  });

  it('names the bad field', () => {
    expect(fieldOf({})).toBe('networks');
    expect(fieldOf({ networks: [] })).toBe('networks');
    expect(fieldOf({ networks: [{ ...base, chain_id: 1 }] })).toBe('networks[0].chain_id');
    expect(fieldOf({ networks: [{ ...base, name: 'mainnet' }] })).toBe('networks[0].name');
    expect(fieldOf({ networks: [{ ...base, rpc_url: 'ftp://x' }] })).toBe('networks[0].rpc_url');
    expect(fieldOf({ networks: [{ ...base, assets: [{ symbol: 'USDC', address: '0x12', decimals: 6 }] }] })).toBe(
      'networks[0].assets[0].address',
    );
    expect(fieldOf({ networks: [{ ...base, assets: [{ symbol: 'USDC', address: USDC, decimals: 6.5 }] }] })).toBe(
      'networks[0].assets[0].decimals',
    );
    expect(fieldOf({ networks: [{ ...base, native: { ...base.native, spread_bps: 10000 } }] })).toBe('networks[0].native.spread_bps');
    expect(fieldOf({ networks: [{ ...base, colour: 'blue' }] })).toBe('networks[0].colour');
    expect(fieldOf({ networks: [base, base] })).toBe('networks[1].name');
    expect(fieldOf({ networks: [base, { ...base, name: 'other' }] })).toBe('networks[1].chain_id');
  });
});

describe('amounts', () => {
  it('normalises stablecoin decimals to micro, rounding down', () => {
    expect(stablecoinToMicro(1_234_567n, 6)).toBe(1_234_567n);
    expect(stablecoinToMicro(1_234_567_890_123_456_789n, 18)).toBe(1_234_567n);
    expect(stablecoinToMicro(999_999_999_999n, 18)).toBe(0n);
    expect(stablecoinToMicro(5n, 2)).toBe(50_000n);
  });

  it('prices a native coin at the oracle minus the spread, one rounding down', () => {
    // 0.5 ETH at 3000.12345678 USD (8 decimals), 1 % spread: 1500.06172839 * 0.99 = 1485.0611111061 USD.
    const price = { answer: 300_012_345_678n, feedDecimals: 8, updatedAtS: 1000n };
    expect(nativeToMicro(500_000_000_000_000_000n, 18, price, 100)).toBe(1_485_061_111n);
    expect(nativeToMicro(1n, 18, price, 0)).toBe(0n);
    expect(() => nativeToMicro(1n, 18, { ...price, answer: 0n }, 0)).toThrow(RangeError);
  });

  it('refuses a stale or non-positive price', () => {
    const price = { answer: 1n, feedDecimals: 8, updatedAtS: 1000n };
    expect(priceRefusal(price, 1000n + 3600n, 3600n)).toBeNull();
    expect(priceRefusal(price, 1000n + 3601n, 3600n)).toBe('price_stale');
    expect(priceRefusal({ ...price, answer: -5n }, 1000n, 3600n)).toBe('price_not_positive');
  });
});

describe('final deposit decisions', () => {
  const facts = {
    amountMicro: 5_000_000n,
    minDepositMicro: 1_000_000n,
    belowMinimumMicro: 0n,
    balanceCapMicro: 10_000_000n as bigint | null,
    availableMicro: 0n,
    maxCreditMicro: 10n ** 15n,
  };
  const credit = { action: 'credit', joinBelowMinimum: false };
  it('credits under the cap, holds over it, records below the minimum', () => {
    expect(decideFinalDeposit(facts)).toEqual(credit);
    expect(decideFinalDeposit({ ...facts, availableMicro: 5_000_000n })).toEqual(credit);
    expect(decideFinalDeposit({ ...facts, availableMicro: 5_000_001n })).toEqual({
      action: 'hold',
      reason: 'balance_cap',
      joinBelowMinimum: false,
    });
    expect(decideFinalDeposit({ ...facts, balanceCapMicro: null, availableMicro: 10n ** 12n })).toEqual(credit);
    expect(decideFinalDeposit({ ...facts, amountMicro: 999_999n })).toEqual({ action: 'below_minimum' });
  });

  it('tells a deposit bigger than the cap itself (room never comes) from one that waits for room', () => {
    expect(decideFinalDeposit({ ...facts, amountMicro: 10_000_001n })).toEqual({
      action: 'hold',
      reason: 'exceeds_balance_cap',
      joinBelowMinimum: false,
    });
    expect(decideFinalDeposit({ ...facts, maxCreditMicro: 4_999_999n, balanceCapMicro: null })).toMatchObject({
      reason: 'exceeds_balance_cap',
    });
    expect(exceedsBalanceCap(10n, 10n, 100n)).toBe(false);
    expect(exceedsBalanceCap(11n, 10n, 100n)).toBe(true);
    expect(exceedsBalanceCap(11n, null, 10n)).toBe(true);
    expect(largestReleasable(10n, 100n)).toBe(10n);
    expect(largestReleasable(null, 100n)).toBe(100n);
  });

  it('adds small deposits up: at the minimum they are decided as one deposit of their sum', () => {
    const small = { ...facts, amountMicro: 400_000n };
    expect(decideFinalDeposit({ ...small, belowMinimumMicro: 599_999n })).toEqual({ action: 'below_minimum' });
    expect(decideFinalDeposit({ ...small, belowMinimumMicro: 600_000n })).toEqual({ action: 'credit', joinBelowMinimum: true });
    expect(decideFinalDeposit({ ...small, belowMinimumMicro: 600_000n, availableMicro: 9_000_001n })).toEqual({
      action: 'hold',
      reason: 'balance_cap',
      joinBelowMinimum: true,
    });
    // A deposit over the minimum takes the small ones along when they fit with it, and leaves them when they do not.
    expect(decideFinalDeposit({ ...facts, belowMinimumMicro: 500_000n })).toEqual({ action: 'credit', joinBelowMinimum: true });
    expect(decideFinalDeposit({ ...facts, belowMinimumMicro: 500_000n, availableMicro: 5_000_000n })).toEqual(credit);
    expect(decideFinalDeposit({ ...facts, amountMicro: 0n, belowMinimumMicro: 5_000_000n })).toEqual({ action: 'below_minimum' });
  });

  it('refunds only USDC on the payout network, HELD, to a known sender', () => {
    const usdc = `0x${'a'.repeat(40)}`;
    const rail = { chainId: 8453, usdcAddress: usdc };
    const held = { state: 'HELD' as const, fromAddress: `0x${'b'.repeat(40)}`, chainId: 8453, tokenAddress: usdc, amountMicro: 5n };
    expect(refundRefusal(held, rail)).toBeNull();
    expect(refundRefusal({ ...held, tokenAddress: usdc.toUpperCase().replace('0X', '0x') }, rail)).toBeNull();
    expect(refundRefusal({ ...held, state: 'CREDITED' }, rail)).toBe('not_held');
    expect(refundRefusal(held, null)).toBe('no_payout_rail');
    expect(refundRefusal({ ...held, chainId: 137 }, rail)).toBe('asset_not_refundable');
    expect(refundRefusal({ ...held, tokenAddress: null }, rail)).toBe('asset_not_refundable');
    expect(refundRefusal({ ...held, fromAddress: null }, rail)).toBe('sender_unknown');
    expect(refundRefusal({ ...held, fromAddress: `0x${'0'.repeat(40)}` }, rail)).toBe('sender_unknown');
  });

  it('releases a held deposit only whole, and reports the room left', () => {
    expect(heldDepositFits(5n, 5n, 10n, 100n)).toBe(true);
    expect(heldDepositFits(6n, 5n, 10n, 100n)).toBe(false);
    expect(heldDepositFits(6n, 5n, null, 100n)).toBe(true);
    expect(roomUnderCap(3n, 10n)).toBe(7n);
    expect(roomUnderCap(30n, 10n)).toBe(0n);
    expect(roomUnderCap(30n, null)).toBeNull();
  });

  it('keys a credit by chain, tx hash and log index', () => {
    const tx = `0x${'ab'.repeat(32)}`;
    expect(chainCreditRef(8453, tx, 3)).toBe(`chain:8453:${tx}:3`);
    expect(chainCreditRef(8453, tx, NATIVE_LOG_INDEX)).toBe(`chain:8453:${tx}:-1`);
    expect(() => chainCreditRef(8453, tx.toUpperCase(), 0)).toThrow(RangeError);
    // After a failed refund, the next decision on the deposit is keyed apart from the refund's postings.
    expect(depositMoneyRef('chain:8453:x:3', null)).toBe('chain:8453:x:3');
    expect(depositMoneyRef('chain:8453:x:3', 'r1')).toBe('chain:8453:x:3:after-refund:r1');
  });
});

describe('scanning', () => {
  it('reads contiguous bounded ranges up to the head', () => {
    expect(nextRange(10n, 10n, 100)).toBeNull();
    expect(nextRange(10n, 11n, 100)).toEqual({ from: 11n, to: 11n });
    expect(nextRange(10n, 500n, 100)).toEqual({ from: 11n, to: 110n });
    expect(rewindTo(120n, 100n)).toBe(100n);
    expect(rewindTo(90n, 100n)).toBe(90n);
  });

  it('calls finality stalled past the threshold', () => {
    expect(finalityStalled(0, 60_000, 60_000)).toBe(false);
    expect(finalityStalled(0, 60_001, 60_000)).toBe(true);
  });
});
