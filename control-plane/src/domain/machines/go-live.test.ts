import { describe, expect, it } from 'vitest';
import { changesOnlyLastSeen, initialLiveState, livenessAt, onHeartbeat, readinessOf } from './go-live.js';

describe('go-live', () => {
  it('starts waiting with go-live, off without', () => {
    expect(initialLiveState(true)).toBe('waiting');
    expect(initialLiveState(false)).toBe('off');
  });

  it('waiting -> live on the first healthy heartbeat, which lists the offer', () => {
    expect(onHeartbeat('waiting', null, { healthy: true, problems: [] })).toEqual({ live: 'live', error: null, wentLive: true });
  });

  it('waiting -> failed when unhealthy before ever going live, with the problems as the error', () => {
    expect(onHeartbeat('waiting', null, { healthy: false, problems: ['docker unreachable', 'disk full'] })).toEqual({
      live: 'failed',
      error: 'docker unreachable; disk full',
      wentLive: false,
    });
    expect(onHeartbeat('waiting', null, { healthy: false, problems: [] }).error).toBe('the agent reported itself unhealthy');
  });

  it('failed -> live once healthy; live stays live; off stays off', () => {
    expect(onHeartbeat('failed', 'x', { healthy: true, problems: [] })).toEqual({ live: 'live', error: null, wentLive: true });
    expect(onHeartbeat('live', null, { healthy: false, problems: ['x'] })).toEqual({ live: 'live', error: null, wentLive: false });
    expect(onHeartbeat('off', null, { healthy: true, problems: [] })).toEqual({ live: 'off', error: null, wentLive: false });
  });

  it('is online within 3 heartbeat intervals of the last heartbeat', () => {
    const at = new Date('2026-01-01T00:00:00.000Z');
    expect(livenessAt(null, at, 15_000)).toBe('offline');
    expect(livenessAt(at, new Date(at.getTime() + 45_000), 15_000)).toBe('online');
    expect(livenessAt(at, new Date(at.getTime() + 45_001), 15_000)).toBe('offline');
  });

  it('readiness: ready if live, online and healthy; provisioning while waiting; else unavailable', () => {
    expect(readinessOf('live', 'online', true)).toBe('ready');
    expect(readinessOf('live', 'offline', true)).toBe('unavailable');
    expect(readinessOf('live', 'online', false)).toBe('unavailable');
    expect(readinessOf('waiting', 'offline', null)).toBe('provisioning');
    expect(readinessOf('failed', 'online', false)).toBe('unavailable');
    expect(readinessOf('off', 'online', true)).toBe('unavailable');
  });
});

describe('heartbeats that change nothing but last-seen', () => {
  const machine = { seenBefore: true, live: 'live' as const, error: null, healthy: true, problems: ['a'] };
  const beat = { healthy: true, problems: ['a'] };
  it('are those of a machine seen before, with the same health and problems and no go-live move', () => {
    expect(changesOnlyLastSeen(machine, beat, onHeartbeat('live', null, beat))).toBe(true);
    expect(changesOnlyLastSeen({ ...machine, seenBefore: false }, beat, onHeartbeat('live', null, beat))).toBe(false);
    expect(changesOnlyLastSeen(machine, { ...beat, healthy: false }, onHeartbeat('live', null, beat))).toBe(false);
    expect(changesOnlyLastSeen(machine, { ...beat, problems: ['b'] }, onHeartbeat('live', null, beat))).toBe(false);
    expect(changesOnlyLastSeen(machine, { ...beat, problems: [] }, onHeartbeat('live', null, beat))).toBe(false);
    const waiting = { ...machine, live: 'waiting' as const };
    expect(changesOnlyLastSeen(waiting, beat, onHeartbeat('waiting', null, beat))).toBe(false);
  });
});
