import { describe, expect, it } from 'vitest';
import {
  isHeld,
  mergeSpans,
  parseScore,
  publishedMaintenance,
  RELIABILITY_PENALTY_E4,
  type ReliabilitySettings,
  reliabilityScore,
  scoreText,
} from './reliability.js';

const S = 1000;
const H = 3600 * S;
const DAY = 24 * H;
const settings: ReliabilitySettings = {
  windowMs: 30 * DAY,
  minHistoryMs: 7 * DAY,
  onlineGraceMs: 45 * S,
  penaltyE4: RELIABILITY_PENALTY_E4,
};
// A machine enrolled 60 days before "now" (so the whole 30-day window is history).
const NOW = Date.parse('2026-03-01T00:00:00Z');
const enrolledAtMs = NOW - 60 * DAY;
const always = [{ fromMs: enrolledAtMs, toMs: NOW }];

describe('reliabilityScore', () => {
  it('is 1 for a machine beating the whole window, and counts the grace after its last heartbeat as online', () => {
    const lastBeat = NOW - 30 * S;
    const score = reliabilityScore(
      {
        nowMs: NOW,
        historyFromMs: enrolledAtMs,
        intervals: [{ fromMs: enrolledAtMs, toMs: lastBeat }],
        maintenance: [],
        penalizedAtMs: [],
      },
      settings,
    );
    expect(score).toEqual({
      scoreE4: 10_000,
      isNew: false,
      onlineMs: 30 * DAY,
      countedMs: 30 * DAY,
      windowFromMs: NOW - 30 * DAY,
      penalizedJobs: 0,
    });
  });

  it('loses the silence past the grace: 12 hours silent in 30 days is floor((30d - 12h + 45s) / 30d) in ten-thousandths', () => {
    const gapFrom = NOW - 10 * DAY;
    const intervals = [
      { fromMs: enrolledAtMs, toMs: gapFrom },
      { fromMs: gapFrom + 12 * H, toMs: NOW },
    ];
    const score = reliabilityScore({ nowMs: NOW, historyFromMs: enrolledAtMs, intervals, maintenance: [], penalizedAtMs: [] }, settings);
    const online = 30 * DAY - 12 * H + 45 * S;
    expect(score.onlineMs).toBe(online);
    expect(score.scoreE4).toBe(Math.floor((online * 10_000) / (30 * DAY)));
    expect(score.scoreE4).toBe(9833);
  });

  it('does not count silence inside published maintenance against the machine', () => {
    const gapFrom = NOW - 10 * DAY;
    const intervals = [
      { fromMs: enrolledAtMs, toMs: gapFrom },
      { fromMs: gapFrom + 12 * H, toMs: NOW },
    ];
    const maintenance = [{ fromMs: gapFrom, toMs: gapFrom + 12 * H }];
    const score = reliabilityScore({ nowMs: NOW, historyFromMs: enrolledAtMs, intervals, maintenance, penalizedAtMs: [] }, settings);
    expect(score.countedMs).toBe(30 * DAY - 12 * H);
    expect(score.scoreE4).toBe(10_000);
    // Half the silence announced: only the other half counts, out of the window less the announced half.
    const half = reliabilityScore(
      { nowMs: NOW, historyFromMs: enrolledAtMs, intervals, maintenance: [{ fromMs: gapFrom, toMs: gapFrom + 6 * H }], penalizedAtMs: [] },
      settings,
    );
    expect(half.countedMs).toBe(30 * DAY - 6 * H);
    // The grace after the last heartbeat fell inside the announced half: the six unannounced hours are all lost.
    expect(half.onlineMs).toBe(30 * DAY - 12 * H);
    expect(half.scoreE4).toBe(Math.floor(((30 * DAY - 12 * H) * 10_000) / (30 * DAY - 6 * H)));
    expect(half.scoreE4).toBe(9915);
  });

  it('a window that is all maintenance is full uptime', () => {
    const score = reliabilityScore(
      {
        nowMs: NOW,
        historyFromMs: enrolledAtMs,
        intervals: [],
        maintenance: [{ fromMs: NOW - 40 * DAY, toMs: NOW + DAY }],
        penalizedAtMs: [],
      },
      settings,
    );
    expect(score).toMatchObject({ countedMs: 0, onlineMs: 0, scoreE4: 10_000 });
  });

  it('clips the window to the machine history: a machine enrolled 10 days ago is judged on 10 days', () => {
    const enrolled = NOW - 10 * DAY;
    const intervals = [{ fromMs: enrolled, toMs: NOW - DAY }];
    const score = reliabilityScore({ nowMs: NOW, historyFromMs: enrolled, intervals, maintenance: [], penalizedAtMs: [] }, settings);
    expect(score.windowFromMs).toBe(enrolled);
    expect(score.countedMs).toBe(10 * DAY);
    expect(score.onlineMs).toBe(9 * DAY + 45 * S);
    expect(score.scoreE4).toBe(Math.floor(((9 * DAY + 45 * S) * 10_000) / (10 * DAY)));
    expect(score.isNew).toBe(false);
    // Intervals before the window do not count.
    const old = reliabilityScore(
      {
        nowMs: NOW,
        historyFromMs: enrolledAtMs,
        intervals: [{ fromMs: enrolledAtMs, toMs: NOW - 31 * DAY }],
        maintenance: [],
        penalizedAtMs: [],
      },
      settings,
    );
    expect(old).toMatchObject({ onlineMs: 0, scoreE4: 0 });
  });

  it('starts the history at the first heartbeat: before any, the machine is new with nothing counted', () => {
    const none = reliabilityScore({ nowMs: NOW, historyFromMs: null, intervals: [], maintenance: [], penalizedAtMs: [] }, settings);
    expect(none).toMatchObject({ isNew: true, countedMs: 0, scoreE4: 10_000 });
    expect(isHeld(none, 9800)).toBe(false);
  });

  it('is new until the history covers the minimum, whatever the score', () => {
    const enrolled = NOW - 7 * DAY + S;
    const young = reliabilityScore({ nowMs: NOW, historyFromMs: enrolled, intervals: [], maintenance: [], penalizedAtMs: [] }, settings);
    expect(young).toMatchObject({ isNew: true, scoreE4: 0 });
    expect(isHeld(young, 9800)).toBe(false);
    const grown = reliabilityScore(
      { nowMs: NOW + S, historyFromMs: enrolled, intervals: [], maintenance: [], penalizedAtMs: [] },
      settings,
    );
    expect(grown.isNew).toBe(false);
    expect(isHeld(grown, 9800)).toBe(true);
  });

  it('subtracts 0.02 per failed start or lost job inside the window, clamped at 0', () => {
    const inside = [NOW - DAY, NOW - 2 * DAY, NOW - 3 * DAY];
    const outside = [NOW - 31 * DAY];
    const score = reliabilityScore(
      { nowMs: NOW, historyFromMs: enrolledAtMs, intervals: always, maintenance: [], penalizedAtMs: [...inside, ...outside] },
      settings,
    );
    expect(score).toMatchObject({ penalizedJobs: 3, scoreE4: 10_000 - 3 * 200 });
    expect(isHeld(score, 9800)).toBe(true);
    expect(isHeld({ scoreE4: 9800, isNew: false }, 9800)).toBe(false);
    const many = reliabilityScore(
      {
        nowMs: NOW,
        historyFromMs: enrolledAtMs,
        intervals: always,
        maintenance: [],
        penalizedAtMs: Array.from({ length: 60 }, (_, i) => NOW - i * H),
      },
      settings,
    );
    expect(many.scoreE4).toBe(0);
  });
});

describe('publishedMaintenance', () => {
  it('counts a window from its publication until the version that withdrew it', () => {
    const t0 = NOW - 20 * DAY;
    const spans = publishedMaintenance([
      // Published 2 days into a window that began 3 days in: only from publication.
      {
        committedAtMs: t0 + 2 * DAY,
        windows: [
          { fromMs: t0 + DAY, toMs: t0 + 3 * DAY },
          { fromMs: t0 + 5 * DAY, toMs: t0 + 9 * DAY },
        ],
      },
      // The next version keeps the second window's start but the host withdraws it at day 7.
      { committedAtMs: t0 + 7 * DAY, windows: [] },
      { committedAtMs: t0 + 8 * DAY, windows: [{ fromMs: t0 + 10 * DAY, toMs: t0 + 11 * DAY }] },
    ]);
    expect(spans).toEqual([
      { fromMs: t0 + 2 * DAY, toMs: t0 + 3 * DAY },
      { fromMs: t0 + 5 * DAY, toMs: t0 + 7 * DAY },
      { fromMs: t0 + 10 * DAY, toMs: t0 + 11 * DAY },
    ]);
  });

  it('a window kept by the next version runs on through it', () => {
    const w = { fromMs: NOW - 5 * DAY, toMs: NOW - DAY };
    expect(
      publishedMaintenance([
        { committedAtMs: NOW - 10 * DAY, windows: [w] },
        { committedAtMs: NOW - 3 * DAY, windows: [w] },
      ]),
    ).toEqual([w]);
  });
});

describe('scores on the wire', () => {
  it('writes four decimals and reads 0..1 with up to four', () => {
    expect(scoreText(10_000)).toBe('1.0000');
    expect(scoreText(9833)).toBe('0.9833');
    expect(scoreText(5)).toBe('0.0005');
    expect(scoreText(0)).toBe('0.0000');
    expect(parseScore('0.98')).toBe(9800);
    expect(parseScore('1')).toBe(10_000);
    expect(parseScore('0')).toBe(0);
    expect(parseScore('0.0001')).toBe(1);
    for (const bad of ['1.5', '1.0001', '0.98765', '-0.1', '.5', '2', 'abc', '']) expect(parseScore(bad)).toBeNull();
  });

  it('merges overlapping and touching spans', () => {
    expect(
      mergeSpans([
        { fromMs: 5, toMs: 8 },
        { fromMs: 0, toMs: 3 },
        { fromMs: 3, toMs: 4 },
        { fromMs: 7, toMs: 10 },
        { fromMs: 12, toMs: 12 },
      ]),
    ).toEqual([
      { fromMs: 0, toMs: 4 },
      { fromMs: 5, toMs: 10 },
    ]);
  });
});
