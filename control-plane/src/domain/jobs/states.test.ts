import { JOB_STATES } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { assertTransition, canTransition, EXTENDABLE_STATES, STOPPABLE_STATES, stopAnswerOf, TRANSITIONS } from './states.js';

describe('job state machine', () => {
  it('allows the contract order RESERVED -> STARTING -> RUNNING -> STOPPING -> STOPPED -> CLEANING -> CLOSED', () => {
    const order = ['RESERVED', 'STARTING', 'RUNNING', 'STOPPING', 'STOPPED', 'CLEANING', 'CLOSED'] as const;
    for (let i = 0; i + 1 < order.length; i++) expect(canTransition(order[i] as never, order[i + 1] as never)).toBe(true);
  });

  it('has FAILED and RECONCILING as alternatives, and nothing leaves CLOSED or FAILED', () => {
    expect(canTransition('RUNNING', 'RECONCILING')).toBe(true);
    expect(canTransition('RECONCILING', 'RUNNING')).toBe(true);
    expect(canTransition('RECONCILING', 'FAILED')).toBe(true);
    expect(canTransition('STARTING', 'FAILED')).toBe(true);
    expect(TRANSITIONS.CLOSED).toEqual([]);
    expect(TRANSITIONS.FAILED).toEqual([]);
  });

  it('never fails a job once a stop was asked for, never goes backwards to RESERVED', () => {
    for (const from of ['STOPPING', 'STOPPED', 'CLEANING'] as const) expect(canTransition(from, 'FAILED')).toBe(false);
    for (const from of JOB_STATES) expect(canTransition(from, 'RESERVED')).toBe(false);
    expect(() => assertTransition('CLOSED', 'RUNNING')).toThrow(/not allowed/);
  });

  it('stops and extends only where the contract allows', () => {
    expect(STOPPABLE_STATES).toEqual(['RESERVED', 'STARTING', 'RUNNING', 'RECONCILING']);
    for (const s of ['STOPPING', 'STOPPED', 'CLEANING', 'CLOSED', 'FAILED', 'RECONCILING'] as const)
      expect(EXTENDABLE_STATES).not.toContain(s);
    expect(stopAnswerOf('STOPPED')).toBe('STOPPED');
    expect(stopAnswerOf('FAILED')).toBeNull();
    expect(stopAnswerOf('RUNNING')).toBeNull();
  });
});
