import type { OfferCommitRequest } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors.js';
import { bandwidthMbpsOf, isAvailableAt, seedOfferTerms, validateOfferCommit } from './offer.js';

const now = new Date('2026-01-01T00:00:00.000Z');
const body = (over: Partial<OfferCommitRequest> = {}): OfferCommitRequest => ({
  rate_micro_per_hour: '1000000',
  included_quotas: { included_disk_gib: 100, included_egress_gib: 50 },
  available_from: '2026-01-01T00:00:00Z',
  available_until: '2026-02-01T00:00:00Z',
  expected_version: '0',
  ...over,
});

function refusal(over: Partial<OfferCommitRequest>): string {
  try {
    validateOfferCommit(body(over), now);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('VALIDATION_FAILED');
    return (error as Error).message;
  }
  throw new Error('accepted');
}

const w = (starts_at: string, ends_at: string, reason = 'kernel update') => ({ starts_at, ends_at, reason });

describe('offer commit validation', () => {
  it('accepts a valid offer and normalises window timestamps', () => {
    const terms = validateOfferCommit(
      body({ maintenance_windows: [w('2026-01-10T00:00:00Z', '2026-01-10T02:00:00Z'), w('2026-01-10T02:00:00Z', '2026-01-10T03:00:00Z')] }),
      now,
    );
    expect(terms.rateMicroPerHour).toBe(1_000_000n);
    expect(terms.maintenanceWindows[0]).toEqual({
      starts_at: '2026-01-10T00:00:00.000Z',
      ends_at: '2026-01-10T02:00:00.000Z',
      reason: 'kernel update',
    });
  });

  it('names the field of each refusal', () => {
    expect(refusal({ rate_micro_per_hour: '0' })).toContain('body/rate_micro_per_hour');
    expect(refusal({ rate_micro_per_hour: '1000000000000000001' })).toContain('body/rate_micro_per_hour');
    expect(refusal({ available_until: '2026-01-01T00:00:00Z' })).toContain('body/available_until must be after available_from');
    expect(refusal({ available_from: '2025-01-01T00:00:00Z', available_until: '2025-12-31T00:00:00Z' })).toContain(
      'body/available_until must be in the future',
    );
    expect(refusal({ maintenance_windows: [w('2026-01-10T02:00:00Z', '2026-01-10T01:00:00Z')] })).toContain(
      'body/maintenance_windows/0/ends_at must be after starts_at',
    );
    expect(refusal({ maintenance_windows: [w('2026-01-10T02:00:00Z', '2026-01-10T02:00:00Z')] })).toContain(
      'body/maintenance_windows/0/ends_at',
    );
    expect(refusal({ maintenance_windows: [w('2025-12-31T23:00:00Z', '2026-01-01T01:00:00Z')] })).toContain(
      'body/maintenance_windows/0/starts_at must not be before available_from',
    );
    expect(refusal({ maintenance_windows: [w('2026-01-31T23:00:00Z', '2026-02-01T01:00:00Z')] })).toContain(
      'body/maintenance_windows/0/ends_at must not be after available_until',
    );
    expect(
      refusal({
        maintenance_windows: [w('2026-01-10T00:00:00Z', '2026-01-10T02:00:00Z'), w('2026-01-10T01:00:00Z', '2026-01-10T03:00:00Z')],
      }),
    ).toContain('body/maintenance_windows/1/starts_at');
    expect(
      refusal({
        maintenance_windows: [w('2026-01-12T00:00:00Z', '2026-01-12T02:00:00Z'), w('2026-01-10T00:00:00Z', '2026-01-10T01:00:00Z')],
      }),
    ).toContain('body/maintenance_windows/1/starts_at');
  });

  it('seeds 30 days from now', () => {
    const seed = seedOfferTerms(500_000n, now);
    expect(seed.availableUntil.toISOString()).toBe('2026-01-31T00:00:00.000Z');
    expect(seed.maintenanceWindows).toEqual([]);
  });

  it('availability at an instant excludes maintenance', () => {
    const terms = validateOfferCommit(body({ maintenance_windows: [w('2026-01-10T00:00:00Z', '2026-01-10T02:00:00Z')] }), now);
    expect(isAvailableAt(terms, new Date('2026-01-09T23:59:59Z'))).toBe(true);
    expect(isAvailableAt(terms, new Date('2026-01-10T00:00:00Z'))).toBe(false);
    expect(isAvailableAt(terms, new Date('2026-01-10T02:00:00Z'))).toBe(true);
    expect(isAvailableAt(terms, new Date('2026-02-01T00:00:00Z'))).toBe(false);
  });

  it('bandwidth is the slower direction in whole Mbps', () => {
    expect(bandwidthMbpsOf(940.7, 450.2)).toBe(450n);
    expect(bandwidthMbpsOf(null, 99.9)).toBe(99n);
    expect(bandwidthMbpsOf(null, null)).toBeNull();
  });
});
