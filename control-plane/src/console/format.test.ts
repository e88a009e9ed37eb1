import { describe, expect, it } from 'vitest';
import { duration, gpus, usd, usdInput, usdToMicro } from './format.js';

describe('the console’s one money rule', () => {
  it('shows two decimals at or above $1 (rounded half up to the cent) and the micro-dollar below', () => {
    expect(usd('20000000')).toBe('$20.00');
    expect(usd('4981663')).toBe('$4.98');
    expect(usd('4985000')).toBe('$4.99');
    expect(usd('999995')).toBe('$0.999995');
    expect(usd('1000000')).toBe('$1.00');
    expect(usd('18337')).toBe('$0.018337');
    expect(usd('500000')).toBe('$0.50');
    expect(usd('1')).toBe('$0.000001');
    expect(usd('0')).toBe('$0.00');
    expect(usd(-2_500_000n)).toBe('-$2.50');
    expect(usd('1234567890000')).toBe('$1,234,567.89');
    expect(usd(null)).toBe('-');
  });

  it('puts the exact amount in form fields, which read back to the same micro-dollars', () => {
    for (const micro of ['4981663', '20000000', '18337', '1']) expect(usdToMicro(usdInput(micro))?.toString()).toBe(micro);
  });

  it('never shows "- × -" for GPUs', () => {
    expect(gpus(2, 'NVIDIA L4')).toBe('2 × NVIDIA L4');
    expect(gpus(undefined, undefined)).toBe('CPU only');
    expect(gpus(0, 'NVIDIA L4')).toBe('CPU only');
    expect(duration(5400)).toBe('1 h 30 min');
    expect(duration(600)).toBe('10 min');
  });
});
