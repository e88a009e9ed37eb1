import { describe, expect, it } from 'vitest';
import { isMatured, maturesAtOf, maturityIntervalMsOf, takeFromEarnings, takeFromLots } from './maturity.js';

const at = new Date('2026-11-27T12:00:00.000Z');

describe('earnings maturity (issue 24 item 4)', () => {
  it('a charge matures at its own time plus the maturity, never earlier; 0 turns maturity off', () => {
    expect(maturesAtOf(at, 86_400)?.toISOString()).toBe('2026-11-28T12:00:00.000Z');
    expect(maturesAtOf(at, 2)?.toISOString()).toBe('2026-11-27T12:00:02.000Z');
    expect(maturesAtOf(at, 0)).toBeNull();
    expect(() => maturesAtOf(at, -1)).toThrow(RangeError);
    expect(() => maturesAtOf(at, 1.5)).toThrow(RangeError);
    const due = maturesAtOf(at, 10) as Date;
    expect(isMatured(due, new Date(due.getTime() - 1))).toBe(false);
    expect(isMatured(due, due)).toBe(true);
  });

  it('the worker runs every tenth of the maturity, between 1 s and 60 s', () => {
    expect(maturityIntervalMsOf(86_400)).toBe(60_000);
    expect(maturityIntervalMsOf(100)).toBe(10_000);
    expect(maturityIntervalMsOf(2)).toBe(1_000);
    expect(maturityIntervalMsOf(0)).toBe(1_000);
  });
});

describe('taking money back from a host (issue 24 item 3)', () => {
  it('takes pending first, then payable, and the platform pays what the host does not have', () => {
    expect(takeFromEarnings(5n, 10n, 10n)).toEqual({ fromPendingMicro: 5n, fromPayableMicro: 0n, fromPlatformMicro: 0n });
    expect(takeFromEarnings(15n, 10n, 10n)).toEqual({ fromPendingMicro: 10n, fromPayableMicro: 5n, fromPlatformMicro: 0n });
    expect(takeFromEarnings(25n, 10n, 10n)).toEqual({ fromPendingMicro: 10n, fromPayableMicro: 10n, fromPlatformMicro: 5n });
    expect(takeFromEarnings(7n, 0n, 0n)).toEqual({ fromPendingMicro: 0n, fromPayableMicro: 0n, fromPlatformMicro: 7n });
    expect(takeFromEarnings(0n, 3n, 3n)).toEqual({ fromPendingMicro: 0n, fromPayableMicro: 0n, fromPlatformMicro: 0n });
    expect(() => takeFromEarnings(-1n, 0n, 0n)).toThrow(RangeError);
  });

  it('takes from the lots farthest from maturity first, never a lot below zero', () => {
    const lots = [
      { id: 'a', remainingMicro: 4n, maturesAt: new Date('2026-11-28T00:00:00Z') },
      { id: 'b', remainingMicro: 3n, maturesAt: new Date('2026-11-28T02:00:00Z') },
      { id: 'c', remainingMicro: 5n, maturesAt: new Date('2026-11-28T01:00:00Z') },
    ];
    expect(takeFromLots(lots, 6n)).toEqual([
      { id: 'b', takenMicro: 3n, remainingMicro: 0n },
      { id: 'c', takenMicro: 3n, remainingMicro: 2n },
    ]);
    expect(takeFromLots(lots, 100n).reduce((sum, t) => sum + t.takenMicro, 0n)).toBe(12n);
    expect(takeFromLots(lots, 0n)).toEqual([]);
  });
});
