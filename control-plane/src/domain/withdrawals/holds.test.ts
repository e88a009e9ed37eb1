import { describe, expect, it } from 'vitest';
import { type HoldFacts, type HoldPolicy, holdReasons, replacementFees } from './holds.js';
import { defaultWithdrawalBalance, reviewable, scopeForWithdrawal, withdrawalKindOf } from './states.js';

const policy: HoldPolicy = { reviewAboveMicro: 100n, newAddressHoldMs: 86_400_000, dailyLimitMicro: 500n, reviewFirst: true };
const now = new Date('2026-11-24T12:00:00Z');
const facts = (over: Partial<HoldFacts> = {}): HoldFacts => ({
  amountMicro: 50n,
  address: { version: 1n, createdAt: new Date('2026-11-01T00:00:00Z') },
  requestedVersion: 1n,
  lastDayMicro: 50n,
  paidBefore: true,
  approved: false,
  now,
  ...over,
});

describe('withdrawal holds', () => {
  it('pays a request that passes every rule', () => {
    expect(holdReasons(policy, facts())).toEqual([]);
  });

  it('holds for each reason, all of them named', () => {
    const reasons = holdReasons(
      policy,
      facts({
        amountMicro: 101n,
        address: { version: 1n, createdAt: new Date(now.getTime() - 1000) },
        lastDayMicro: 501n,
        paidBefore: false,
      }),
    );
    expect(reasons).toEqual(['amount_over_review_threshold', 'address_new', 'daily_limit', 'first_withdrawal']);
    // The bounds themselves pass: above, not at.
    expect(holdReasons(policy, facts({ amountMicro: 100n, lastDayMicro: 500n }))).toEqual([]);
    expect(holdReasons(policy, facts({ address: { version: 1n, createdAt: new Date(now.getTime() - 86_400_000) } }))).toEqual([]);
    expect(holdReasons({ ...policy, reviewFirst: false }, facts({ paidBefore: false }))).toEqual([]);
  });

  it('lets an approval lift the holds but never a changed or removed address', () => {
    expect(holdReasons(policy, facts({ amountMicro: 10_000n, paidBefore: false, approved: true }))).toEqual([]);
    expect(holdReasons(policy, facts({ address: { version: 2n, createdAt: new Date(0) }, approved: true }))).toEqual(['address_changed']);
    expect(holdReasons(policy, facts({ address: null, approved: true }))).toEqual(['address_changed']);
  });

  it('replaces a stuck transaction with both fees at least 12.5 % higher, never below the network', () => {
    const stuck = { maxFeePerGas: 1_000n, maxPriorityFeePerGas: 100n };
    expect(replacementFees(stuck, { maxFeePerGas: 10n, maxPriorityFeePerGas: 1n })).toEqual({
      maxFeePerGas: 1_251n,
      maxPriorityFeePerGas: 126n,
    });
    expect(replacementFees(stuck, { maxFeePerGas: 5_000n, maxPriorityFeePerGas: 300n })).toEqual({
      maxFeePerGas: 5_000n,
      maxPriorityFeePerGas: 300n,
    });
    // The fee cap never falls below the tip.
    const tipHeavy = replacementFees({ maxFeePerGas: 10n, maxPriorityFeePerGas: 10n }, { maxFeePerGas: 1n, maxPriorityFeePerGas: 100n });
    expect(tipHeavy.maxFeePerGas).toBeGreaterThanOrEqual(tipHeavy.maxPriorityFeePerGas);
  });

  it('reviews only what is not pinned yet', () => {
    expect(['INTENT', 'UNSIGNED'].every((s) => reviewable(s as never))).toBe(true);
    expect(['SIGNED', 'BROADCAST', 'CONFIRMED', 'FAILED'].some((s) => reviewable(s as never))).toBe(false);
  });

  it('takes the kind from the balance drawn, not the role; the role only picks the default of a request naming none', () => {
    expect(withdrawalKindOf('payable')).toBe('payout');
    expect(withdrawalKindOf('available')).toBe('withdrawal');
    expect(scopeForWithdrawal('payout')).toBe('host');
    expect(scopeForWithdrawal('withdrawal')).toBe('renter');
    expect(defaultWithdrawalBalance('host')).toBe('payable');
    expect(defaultWithdrawalBalance('renter')).toBe('available');
    expect(defaultWithdrawalBalance('admin')).toBe('available');
  });
});
