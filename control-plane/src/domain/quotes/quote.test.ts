import { describe, expect, it } from 'vitest';
import type { DomainError } from '../../errors.js';
import { assertOneImageSource, assertQuoteUsable, assertWindowAvailable, assignGpus, hostCeilingOf, type QuoteRecord } from './quote.js';

const d = (s: string) => new Date(`2026-01-01T${s}Z`);
const offer = {
  availableFrom: d('00:00:00'),
  availableUntil: d('12:00:00'),
  maintenanceWindows: [{ starts_at: '2026-01-01T06:00:00.000Z', ends_at: '2026-01-01T07:00:00.000Z', reason: 'kernel' }],
};
const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (error) {
    return (error as DomainError).code;
  }
  return undefined;
};

describe('quote rules', () => {
  it('needs exactly one of template_id and image_digest', () => {
    expect(codeOf(() => assertOneImageSource({}))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => assertOneImageSource({ template_id: 'a', image_digest: 'b' }))).toBe('VALIDATION_FAILED');
    expect(codeOf(() => assertOneImageSource({ image_digest: 'b' }))).toBeUndefined();
  });

  it('keeps the requested duration inside availability and clear of maintenance', () => {
    expect(codeOf(() => assertWindowAvailable(offer, d('01:00:00'), d('05:00:00')))).toBeUndefined();
    expect(codeOf(() => assertWindowAvailable(offer, d('05:00:00'), d('06:00:01')))).toBe('MAINTENANCE_CONFLICT');
    expect(codeOf(() => assertWindowAvailable(offer, d('07:00:00'), d('12:00:00')))).toBeUndefined();
    expect(codeOf(() => assertWindowAvailable(offer, d('08:00:00'), d('12:00:01')))).toBe('OUTSIDE_AVAILABILITY');
  });

  it('snapshots the host ceiling: the next maintenance start, or the end of availability', () => {
    expect(hostCeilingOf(offer, d('01:00:00'))).toEqual(d('06:00:00'));
    expect(hostCeilingOf(offer, d('06:30:00'))).toEqual(d('06:30:00'));
    expect(hostCeilingOf(offer, d('07:30:00'))).toEqual(d('12:00:00'));
  });

  it('assigns free GPUs in manifest order; a machine without GPUs is rented whole', () => {
    const gpus = ['a', 'b', 'c'].map((pci) => ({ pci_address: pci, model: 'GPU', vram_bytes: '1' }));
    expect(assignGpus(gpus, new Set(['a']), 1, 2)).toEqual(['b', 'c']);
    expect(codeOf(() => assignGpus(gpus, new Set(['a', 'b']), 1, 2))).toBe('GPUS_NOT_AVAILABLE');
    expect(codeOf(() => assignGpus(gpus, new Set(), 0, 4))).toBe('GPUS_NOT_AVAILABLE');
    expect(assignGpus([], new Set(), 0, 1)).toEqual([]);
    expect(codeOf(() => assignGpus([], new Set(), 0, 2))).toBe('GPUS_NOT_AVAILABLE');
    expect(codeOf(() => assignGpus([], new Set(), 1, 1))).toBe('MACHINE_NOT_AVAILABLE');
  });

  it('refuses used or expired quotes', () => {
    const q: QuoteRecord = {
      id: '00000000-0000-4000-8000-000000000001',
      accountId: 'acc',
      machineId: '00000000-0000-4000-8000-000000000002',
      offerId: 'o',
      offerVersion: 1n,
      gpuCount: 1,
      machineRateMicroPerHour: 500_000n,
      platformFeeBps: 1000n,
      budgetMicro: 550_000n,
      durationLimitS: 3600n,
      estimatedTotalMicro: 550_000n,
      manifestHash: `sha256:${'0'.repeat(64)}`,
      imageDigest: `r/x@sha256:${'1'.repeat(64)}`,
      templateId: null,
      termsVersion: '2026-11',
      includedDiskGib: 0,
      includedEgressGib: 0,
      hostCeilingAt: d('12:00:00'),
      createdAt: d('00:00:00'),
      expiresAt: d('00:01:00'),
      usedAt: null,
      jobId: null,
    };
    expect(codeOf(() => assertQuoteUsable(q, d('00:00:59')))).toBeUndefined();
    expect(codeOf(() => assertQuoteUsable(q, d('00:01:00')))).toBe('QUOTE_EXPIRED');
    expect(codeOf(() => assertQuoteUsable({ ...q, usedAt: d('00:00:10') }, d('00:00:20')))).toBe('QUOTE_ALREADY_USED');
  });
});
