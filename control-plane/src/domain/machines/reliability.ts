// Machine reliability (issue 10 item 2): uptime over a rolling window from the machine's online intervals, published
// maintenance excluded, minus a penalty per job that failed to start or was lost while running. Pure: takes
// milliseconds and counts, never a store.

/** Scores are kept and compared in ten-thousandths: "0.9876" on the wire, 9876 here. */
export const RELIABILITY_SCALE = 10_000;

/** What one failed start or lost job costs, in ten-thousandths (0.02). */
export const RELIABILITY_PENALTY_E4 = 200;

/**
 * Close reasons that count against the machine: it failed to start the job (launch failed, never ready in time), or
 * lost it while running (the container vanished, the machine stayed silent past the reconcile timeout, or a GPU of the job left telemetry).
 * A renter's own stop, an exhausted budget or an exited container do not.
 */
export const PENALIZED_CLOSE_REASONS = ['launch_failed', 'start_timeout', 'job_failed', 'agent_lost', 'gpu_lost'] as const;

export interface Span {
  fromMs: number;
  toMs: number;
}

export interface ReliabilitySettings {
  windowMs: number;
  /** A machine enrolled more recently than this is `new`: shown, never held. */
  minHistoryMs: number;
  /** How long after a heartbeat a machine still counts as online (the liveness grace: 3 heartbeat intervals). */
  onlineGraceMs: number;
  penaltyE4: number;
}

export interface ReliabilityInput {
  nowMs: number;
  /**
   * Where the machine's history starts: its first heartbeat (the time between enrollment and the agent's first run is
   * not held against it: nothing could be offered then). Null before any heartbeat.
   */
  historyFromMs: number | null;
  /** First and last heartbeat of each run (machine_online_intervals). */
  intervals: readonly Span[];
  /** Published maintenance, each span already clipped to when it was published and when it was withdrawn. */
  maintenance: readonly Span[];
  /** Jobs that failed to start or were lost while running, by the time it happened. */
  penalizedAtMs: readonly number[];
}

export interface ReliabilityScore {
  scoreE4: number;
  isNew: boolean;
  /** Online time inside the counted part of the window. */
  onlineMs: number;
  /** The window since the first heartbeat, outside published maintenance. */
  countedMs: number;
  windowFromMs: number;
  penalizedJobs: number;
}

/** Sorted, overlapping or touching spans merged; empty ones dropped. */
export function mergeSpans(spans: readonly Span[]): Span[] {
  const sorted = spans.filter((s) => s.toMs > s.fromMs).sort((a, b) => a.fromMs - b.fromMs);
  const merged: Span[] = [];
  for (const span of sorted) {
    const last = merged[merged.length - 1];
    if (last && span.fromMs <= last.toMs) last.toMs = Math.max(last.toMs, span.toMs);
    else merged.push({ ...span });
  }
  return merged;
}

/** `base` minus `holes` (both merged). */
function subtract(base: readonly Span[], holes: readonly Span[]): Span[] {
  const result: Span[] = [];
  for (const span of base) {
    let from = span.fromMs;
    for (const hole of holes) {
      if (hole.toMs <= from || hole.fromMs >= span.toMs) continue;
      if (hole.fromMs > from) result.push({ fromMs: from, toMs: hole.fromMs });
      from = Math.max(from, hole.toMs);
      if (from >= span.toMs) break;
    }
    if (from < span.toMs) result.push({ fromMs: from, toMs: span.toMs });
  }
  return result;
}

/** The length of the intersection of two merged span lists. */
function overlapMs(a: readonly Span[], b: readonly Span[]): number {
  let total = 0;
  let j = 0;
  for (const span of a) {
    while (j < b.length && (b[j] as Span).toMs <= span.fromMs) j++;
    for (let k = j; k < b.length && (b[k] as Span).fromMs < span.toMs; k++) {
      const other = b[k] as Span;
      total += Math.min(span.toMs, other.toMs) - Math.max(span.fromMs, other.fromMs);
    }
  }
  return total;
}

/**
 * The score: online time / counted time over [max(now - window, first heartbeat), now], where counted time leaves out
 * published maintenance and a heartbeat keeps the machine online for the liveness grace after it (the same rule that
 * calls a machine online); floored to ten-thousandths (so 0.97996 never reads as 0.98), minus the penalty per job,
 * clamped to [0, 1]. A window that is all maintenance counts as full uptime.
 */
export function reliabilityScore(input: ReliabilityInput, settings: ReliabilitySettings): ReliabilityScore {
  const { nowMs } = input;
  const historyFromMs = input.historyFromMs ?? nowMs;
  const windowFromMs = Math.min(nowMs, Math.max(nowMs - settings.windowMs, historyFromMs));
  const counted = subtract([{ fromMs: windowFromMs, toMs: nowMs }], mergeSpans(input.maintenance));
  const countedMs = counted.reduce((sum, s) => sum + (s.toMs - s.fromMs), 0);
  const online = mergeSpans(input.intervals.map((s) => ({ fromMs: s.fromMs, toMs: Math.min(nowMs, s.toMs + settings.onlineGraceMs) })));
  const onlineMs = overlapMs(online, counted);
  const uptimeE4 = countedMs === 0 ? RELIABILITY_SCALE : Math.floor((onlineMs * RELIABILITY_SCALE) / countedMs);
  const penalizedJobs = input.penalizedAtMs.filter((at) => at >= windowFromMs && at <= nowMs).length;
  const scoreE4 = Math.max(0, Math.min(RELIABILITY_SCALE, uptimeE4 - penalizedJobs * settings.penaltyE4));
  return {
    scoreE4,
    isNew: input.historyFromMs === null || nowMs - historyFromMs < settings.minHistoryMs,
    onlineMs,
    countedMs,
    windowFromMs,
    penalizedJobs,
  };
}

/** A machine is held off new rentals while it is not new and its score is under the floor; released at or above it. */
export function isHeld(score: Pick<ReliabilityScore, 'scoreE4' | 'isNew'>, floorE4: number): boolean {
  return !score.isNew && score.scoreE4 < floorE4;
}

/** "0.9876": the wire form of a score in ten-thousandths. */
export function scoreText(scoreE4: number): string {
  const whole = Math.floor(scoreE4 / RELIABILITY_SCALE);
  return `${whole}.${String(scoreE4 % RELIABILITY_SCALE).padStart(4, '0')}`;
}

/** The wire form back to ten-thousandths; null when it is not a score ("0", "0.98", "1.0000": up to 4 decimals, 0..1). */
export function parseScore(text: string): number | null {
  const match = /^([01])(?:\.(\d{1,4}))?$/.exec(text);
  if (!match) return null;
  const value = Number(match[1]) * RELIABILITY_SCALE + Number((match[2] ?? '').padEnd(4, '0'));
  return value > RELIABILITY_SCALE ? null : value;
}

/**
 * Maintenance as it was published: each version's windows count from the moment the version was committed (a window
 * published after it began counts only from then) until the next version replaced it (a withdrawn window stops
 * counting then; one the next version keeps goes on through it).
 */
export function publishedMaintenance(versions: ReadonlyArray<{ committedAtMs: number; windows: readonly Span[] }>): Span[] {
  const ordered = [...versions].sort((a, b) => a.committedAtMs - b.committedAtMs);
  const spans: Span[] = [];
  ordered.forEach((version, i) => {
    const until = ordered[i + 1]?.committedAtMs ?? Number.POSITIVE_INFINITY;
    for (const w of version.windows) {
      const fromMs = Math.max(w.fromMs, version.committedAtMs);
      const toMs = Math.min(w.toMs, until);
      if (toMs > fromMs) spans.push({ fromMs, toMs });
    }
  });
  return mergeSpans(spans);
}
