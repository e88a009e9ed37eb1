import { describe, expect, it } from 'vitest';
import { RingBuffer } from './ring-buffer.js';

describe('RingBuffer', () => {
  it('keeps items in order and drops the oldest when full', () => {
    const buffer = new RingBuffer<number>(3);
    expect([1, 2, 3].map((n) => buffer.push(n))).toEqual([0, 0, 0]);
    expect(buffer.push(4)).toBe(1);
    expect(buffer.size).toBe(3);
    expect(buffer.peek(10)).toEqual([2, 3, 4]);
    buffer.discard(2);
    expect(buffer.peek(10)).toEqual([4]);
    buffer.push(5);
    buffer.push(6);
    buffer.push(7);
    expect(buffer.peek(2)).toEqual([5, 6]);
    expect(buffer.discardWhile((n) => n <= 6)).toBe(2);
    expect(buffer.peek(10)).toEqual([7]);
    buffer.discard(5);
    expect(buffer.size).toBe(0);
    expect(buffer.peek(1)).toEqual([]);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new RingBuffer(0)).toThrow(RangeError);
    expect(() => new RingBuffer(1.5)).toThrow(RangeError);
  });
});
