import { JOB_STATES, type JobState } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import {
  type AgentJobStatus,
  agentInstant,
  pullProgressToRecord,
  reactToStatus,
  type StatusReport,
  type StatusStep,
} from './agent-status.js';
import { canTransition } from './states.js';

const report = (status: AgentJobStatus, overrides: Partial<StatusReport> = {}): StatusReport => ({
  status,
  fence: 1n,
  outcome: {},
  accessKnown: true,
  ...overrides,
});
const steps = (state: JobState, r: StatusReport): readonly StatusStep[] => {
  const reaction = reactToStatus({ state, fence: 1n }, r);
  if (reaction.outcome !== 'apply') throw new Error('refused');
  return reaction.steps;
};
const names = (state: JobState, r: StatusReport) => steps(state, r).map((s) => s.step);

describe('job status reactions', () => {
  it('refuses a report under another fence, saying which, whatever it says', () => {
    expect(reactToStatus({ state: 'RUNNING', fence: 2n }, report('exited'))).toEqual({
      outcome: 'refused',
      event: {
        kind: 'status_refused',
        message: 'Agent status "exited" refused: stale fence 1 (the job is at 2).',
        data: { status: 'exited', fence: '1', current_fence: '2' },
      },
    });
    const unknown = reactToStatus({ state: 'RUNNING', fence: 2n }, report('ready', { fence: 3n }));
    expect(unknown.outcome === 'refused' && unknown.event.message).toContain('unknown fence 3');
  });

  it('walks the launch: acceptance, pull progress, starting, readiness with access starts the meter', () => {
    expect(names('RESERVED', report('accepted'))).toEqual(['accept']);
    expect(names('STARTING', report('accepted'))).toEqual([]);
    expect(names('RESERVED', report('pulling'))).toEqual(['accept', 'pull_progress']);
    expect(names('STARTING', report('pulling'))).toEqual(['pull_progress']);
    expect(names('RUNNING', report('pulling'))).toEqual([]);
    expect(names('RESERVED', report('starting'))).toEqual(['accept', 'event']);
    expect(names('RESERVED', report('ready'))).toEqual(['accept', 'start_meter']);
    expect(names('STARTING', report('ready'))).toEqual(['start_meter']);
  });

  it('refuses readiness without a way in, and ignores it once the job is past running', () => {
    expect(steps('STARTING', report('ready', { accessKnown: false }))).toEqual([
      {
        step: 'event',
        event: { kind: 'status_refused', message: 'Readiness refused: the agent reported no access details.', data: { status: 'ready' } },
      },
    ]);
    expect(names('RUNNING', report('ready'))).toEqual(['refresh_access']);
    expect(names('RECONCILING', report('ready'))).toEqual(['rebind', 'refresh_access']);
    expect(steps('STOPPED', report('ready'))).toEqual([
      {
        step: 'event',
        event: { kind: 'status_ignored', message: 'Readiness reported while the job is STOPPED; ignored.', data: { status: 'ready' } },
      },
    ]);
  });

  it('ends jobs by what the agent saw: exits stop running jobs and fail launches, failures never override a stop', () => {
    const outcome = { exit_code: 137, detail: 'oom' };
    expect(steps('RUNNING', report('exited', { outcome }))).toEqual([
      { step: 'event', event: { kind: 'container_exited', message: 'The container exited.', data: outcome } },
      { step: 'begin_stop', reason: 'container_exited' },
    ]);
    expect(steps('STARTING', report('exited', { outcome }))).toEqual([{ step: 'fail', reason: 'launch_failed', data: outcome }]);
    expect(names('STOPPED', report('exited'))).toEqual(['event']);
    expect(steps('RESERVED', report('failed', { outcome }))).toEqual([{ step: 'fail', reason: 'launch_failed', data: outcome }]);
    expect(steps('RECONCILING', report('failed'))).toEqual([{ step: 'fail', reason: 'job_failed', data: {} }]);
    expect(steps('STOPPING', report('failed', { outcome }))).toEqual([
      { step: 'event', event: { kind: 'agent_failure', message: 'The machine reported a failure while stopping.', data: outcome } },
      { step: 'stopped', floor: 'created', data: {} },
    ]);
    expect(names('CLOSED', report('failed'))).toEqual([]);
    for (const state of ['RESERVED', 'STARTING', 'RUNNING', 'RECONCILING', 'STOPPING'] as const) {
      expect(steps(state, report('stopped', { outcome }))).toEqual([{ step: 'stopped', floor: 'stop_requested', data: outcome }]);
    }
    expect(names('STOPPED', report('stopped'))).toEqual([]);
    expect(names('STOPPED', report('cleaned'))).toEqual(['clean_early', 'close']);
    expect(names('CLEANING', report('cleaned'))).toEqual(['close']);
    expect(names('STOPPING', report('cleaned'))).toEqual(['close']);
    expect(names('RUNNING', report('cleaned'))).toEqual([]);
  });

  it('only ever asks for transitions the state machine allows', () => {
    const target: Partial<Record<StatusStep['step'], (from: JobState) => JobState>> = {
      accept: () => 'STARTING',
      start_meter: () => 'RUNNING',
      rebind: () => 'RUNNING',
      begin_stop: () => 'STOPPING',
      fail: () => 'FAILED',
      stopped: () => 'STOPPED',
      clean_early: () => 'CLEANING',
      close: () => 'CLOSED',
    };
    const statuses: AgentJobStatus[] = ['accepted', 'pulling', 'starting', 'ready', 'exited', 'stopped', 'cleaned', 'failed'];
    for (const state of JOB_STATES) {
      for (const status of statuses) {
        let current: JobState = state;
        for (const step of steps(state, report(status))) {
          const to = target[step.step]?.(current);
          if (to === undefined) continue;
          expect(canTransition(current, to), `${status} in ${state}: ${current} -> ${to}`).toBe(true);
          current = to;
        }
      }
    }
  });

  it('coalesces pull progress to one event per 10 points, and the end', () => {
    expect(pullProgressToRecord(null, undefined)).toBeNull();
    expect(pullProgressToRecord(null, 3)).toBe(3);
    expect(pullProgressToRecord(3, 12)).toBeNull();
    expect(pullProgressToRecord(3, 13)).toBe(13);
    expect(pullProgressToRecord(95, 100)).toBe(100);
    expect(pullProgressToRecord(100, 100)).toBeNull();
  });

  it('takes the agent instant, never after now nor before the floor', () => {
    const floor = new Date('2026-01-01T00:00:00.000Z');
    const now = new Date('2026-01-01T01:00:00.000Z');
    expect(agentInstant('2026-01-01T00:30:00.000Z', now, floor)).toEqual(new Date('2026-01-01T00:30:00.000Z'));
    expect(agentInstant('2026-01-01T02:00:00.000Z', now, floor)).toEqual(now);
    expect(agentInstant('2025-12-31T00:00:00.000Z', now, floor)).toEqual(floor);
    expect(agentInstant('not a time', now, floor)).toEqual(now);
  });
});
