import { describe, expect, it } from 'vitest';
import { checkPaymentPayload, nextSettlementStep, paymentRequirements, VALID_BEFORE_MARGIN_S, VALID_BEFORE_SKEW_S } from './x402.js';

const USDC = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const TREASURY = '0x1111111111111111111111111111111111111111';
const PAYER = '0x2222222222222222222222222222222222222222';
const NOW = 1_800_000_000n;

const offered = paymentRequirements({ amountMicro: 5_000_000n, usdc: USDC, treasury: TREASURY, maxTimeoutS: 300, checksum: (a) => a });
const payload = (change: { accepted?: object; authorization?: object; signature?: string; version?: number } = {}) => ({
  x402Version: change.version ?? 2,
  accepted: { ...offered, ...change.accepted },
  payload: {
    signature: change.signature ?? `0x${'ab'.repeat(65)}`,
    authorization: {
      from: PAYER,
      to: TREASURY,
      value: '5000000',
      validAfter: '0',
      validBefore: String(NOW + 300n),
      nonce: `0x${'cd'.repeat(32)}`,
      ...change.authorization,
    },
  },
});
const reasonOf = (p: unknown) => {
  const check = checkPaymentPayload(p, offered, NOW);
  return check.ok ? 'ok' : check.reason;
};

describe('x402 payment checks', () => {
  it('offers exactly the amount in USDC to the treasury, on eip155:8453, with USDC domain', () => {
    expect(offered).toEqual({
      scheme: 'exact',
      network: 'eip155:8453',
      amount: '5000000',
      asset: USDC,
      payTo: TREASURY,
      maxTimeoutSeconds: 300,
      extra: { name: 'USD Coin', version: '2' },
    });
  });

  it('accepts the offered requirement with a matching authorization, and names the first thing wrong otherwise', () => {
    expect(reasonOf(payload())).toBe('ok');
    expect(reasonOf('not an object')).toBe('invalid_payload');
    expect(reasonOf(payload({ version: 1 }))).toBe('invalid_x402_version');
    expect(reasonOf(payload({ accepted: { scheme: 'upto' } }))).toBe('unsupported_scheme');
    expect(reasonOf(payload({ accepted: { network: 'eip155:1' } }))).toBe('invalid_network');
    expect(reasonOf(payload({ accepted: { asset: TREASURY } }))).toBe('invalid_asset');
    expect(reasonOf(payload({ accepted: { amount: '4000000' } }))).toBe('invalid_amount');
    expect(reasonOf(payload({ accepted: { payTo: PAYER } }))).toBe('invalid_recipient');
    expect(reasonOf(payload({ accepted: { maxTimeoutSeconds: 3600 } }))).toBe('requirements_mismatch');
    expect(reasonOf(payload({ authorization: { to: PAYER } }))).toBe('invalid_recipient');
    expect(reasonOf(payload({ authorization: { value: '5000001' } }))).toBe('invalid_amount');
    expect(reasonOf(payload({ authorization: { value: '-1' } }))).toBe('invalid_payload');
    expect(reasonOf(payload({ authorization: { nonce: '0x12' } }))).toBe('invalid_payload');
    expect(reasonOf(payload({ signature: '0x1234' }))).toBe('invalid_signature');
  });

  it('takes validAfter <= now < validBefore - 6 s', () => {
    expect(reasonOf(payload({ authorization: { validAfter: String(NOW + 1n) } }))).toBe('authorization_not_yet_valid');
    expect(reasonOf(payload({ authorization: { validAfter: String(NOW) } }))).toBe('ok');
    expect(reasonOf(payload({ authorization: { validBefore: String(NOW + VALID_BEFORE_MARGIN_S) } }))).toBe('authorization_expired');
    expect(reasonOf(payload({ authorization: { validBefore: String(NOW + VALID_BEFORE_MARGIN_S + 1n) } }))).toBe('ok');
  });

  it('refuses an authorization valid longer than maxTimeoutSeconds plus a small skew (a year is not a top-up)', () => {
    const aYear = NOW + 365n * 24n * 3600n;
    expect(reasonOf(payload({ authorization: { validBefore: String(aYear) } }))).toBe('authorization_valid_too_long');
    expect(reasonOf(payload({ authorization: { validBefore: String(NOW + 300n + VALID_BEFORE_SKEW_S + 1n) } }))).toBe(
      'authorization_valid_too_long',
    );
    expect(reasonOf(payload({ authorization: { validBefore: String(NOW + 300n + VALID_BEFORE_SKEW_S) } }))).toBe('ok');
  });
});

describe('x402 settlement steps', () => {
  const receipt = { success: true, blockNumber: 7n, blockHash: `0x${'ee'.repeat(32)}` as const, transferLogIndex: 3 };
  it('moves a mined settlement on, re-sends an unmined one, and names the exceptions', () => {
    expect(nextSettlementStep({ receipt, authorizationUsed: true, chainTimeS: NOW }, NOW + 10n)).toEqual({
      action: 'mined',
      blockNumber: 7n,
      blockHash: receipt.blockHash,
      logIndex: 3,
    });
    expect(nextSettlementStep({ receipt: null, authorizationUsed: false, chainTimeS: NOW }, NOW + 10n)).toEqual({ action: 'resend' });
    expect(nextSettlementStep({ receipt: null, authorizationUsed: false, chainTimeS: NOW + 10n }, NOW + 10n)).toEqual({
      action: 'exception',
      reason: 'authorization_expired_unmined',
    });
    expect(nextSettlementStep({ receipt: null, authorizationUsed: true, chainTimeS: NOW }, NOW + 10n)).toEqual({
      action: 'exception',
      reason: 'authorization_used_elsewhere',
    });
    expect(
      nextSettlementStep(
        { receipt: { ...receipt, success: false, transferLogIndex: null }, authorizationUsed: true, chainTimeS: NOW },
        NOW + 10n,
      ),
    ).toEqual({ action: 'exception', reason: 'authorization_used_elsewhere' });
    expect(
      nextSettlementStep(
        { receipt: { ...receipt, success: false, transferLogIndex: null }, authorizationUsed: false, chainTimeS: NOW },
        NOW + 10n,
      ),
    ).toEqual({ action: 'exception', reason: 'settlement_reverted' });
  });
});
