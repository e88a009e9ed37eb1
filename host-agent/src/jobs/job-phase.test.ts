import { describe, expect, it } from 'vitest';
import { enterPhase, type JobPhaseEvent, JobPhaseRefusedError, nextPhase, statusOfPhase } from './job-phase.js';
import type { JobPhase, JobRecord } from './job-record.js';

const PHASES: JobPhase[] = ['accepted', 'pulling', 'starting', 'ready', 'exited', 'stopping', 'stopped', 'cleaning', 'cleaned', 'failed'];

/** Every transition the supervisor makes, as (from, event, to). */
const ALLOWED: Array<[JobPhase, JobPhaseEvent, JobPhase]> = [
  ['accepted', 'pull_started', 'pulling'],
  ['accepted', 'image_ready', 'starting'],
  ['pulling', 'image_ready', 'starting'],
  ['starting', 'readiness_verified', 'ready'],
  ['accepted', 'launch_failed', 'failed'],
  ['pulling', 'launch_failed', 'failed'],
  ['starting', 'launch_failed', 'failed'],
  ['ready', 'launch_failed', 'failed'],
  ['ready', 'container_exited', 'exited'],
  ['ready', 'container_vanished', 'failed'],
  ['accepted', 'stop_started', 'stopping'],
  ['pulling', 'stop_started', 'stopping'],
  ['starting', 'stop_started', 'stopping'],
  ['ready', 'stop_started', 'stopping'],
  ['exited', 'stop_started', 'stopping'],
  ['stopping', 'stop_finished', 'stopped'],
  ['accepted', 'clean_started', 'cleaning'],
  ['pulling', 'clean_started', 'cleaning'],
  ['starting', 'clean_started', 'cleaning'],
  ['ready', 'clean_started', 'cleaning'],
  ['exited', 'clean_started', 'cleaning'],
  ['stopping', 'clean_started', 'cleaning'],
  ['stopped', 'clean_started', 'cleaning'],
  ['failed', 'clean_started', 'cleaning'],
  ['cleaning', 'clean_finished', 'cleaned'],
];

const EVENTS = [...new Set(ALLOWED.map(([, event]) => event))];

describe('the job phase transition table', () => {
  it('allows exactly the transitions the supervisor makes', () => {
    for (const phase of PHASES) {
      for (const event of EVENTS) {
        const expected = ALLOWED.find(([from, on]) => from === phase && on === event)?.[2];
        const actual = nextPhase(phase, event);
        expect({ phase, event, next: actual.ok ? actual.phase : undefined }).toEqual({ phase, event, next: expected });
      }
    }
  });

  it('says why a transition is refused', () => {
    expect(nextPhase('cleaned', 'stop_started')).toEqual({ ok: false, reason: 'stop_started cannot happen to a job that is cleaned' });
    expect(nextPhase('ready', 'readiness_verified').ok).toBe(false);
    expect(nextPhase('stopped', 'container_exited').ok).toBe(false);
  });

  it('moves a record only where the table allows, and refuses loudly otherwise', () => {
    const record = { job_id: 'j', phase: 'accepted' } as JobRecord;
    expect(enterPhase(record, 'pull_started')).toBe('pulling');
    expect(record.phase).toBe('pulling');
    expect(() => enterPhase(record, 'clean_finished')).toThrow(JobPhaseRefusedError);
    expect(() => enterPhase(record, 'clean_finished')).toThrow('job j: clean_finished cannot happen to a job that is pulling');
    expect(record.phase).toBe('pulling');
  });

  it('announces every phase but the agent-only stopping and cleaning', () => {
    expect(PHASES.filter((phase) => statusOfPhase(phase) === undefined)).toEqual(['stopping', 'cleaning']);
    expect(statusOfPhase('ready')).toBe('ready');
  });
});
