// The machine reliability variables: the documented defaults, small windows for tests, and refusals naming the variable.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

const base = { ARK_SECRET_KEY: randomBytes(32).toString('hex'), ARK_DATA_DIR: '/nonexistent/ark-config-test' };
const load = (env: Record<string, string> = {}) => loadConfig({ ...base, ...env });

describe('reliability configuration', () => {
  it('defaults: floor 0.98, 30-day window, 7 days of history before a machine is judged, scored every minute', () => {
    expect(load().reliability).toEqual({ floorE4: 9800, windowMs: 2_592_000_000, minHistoryMs: 604_800_000, intervalMs: 60_000 });
  });

  it('reads the variables, small windows included', () => {
    const config = load({
      ARK_RELIABILITY_FLOOR: '0.9',
      ARK_RELIABILITY_WINDOW_S: '60',
      ARK_RELIABILITY_MIN_HISTORY_S: '0',
      ARK_RELIABILITY_INTERVAL_MS: '500',
    });
    expect(config.reliability).toEqual({ floorE4: 9000, windowMs: 60_000, minHistoryMs: 0, intervalMs: 500 });
    expect(load({ ARK_RELIABILITY_FLOOR: '1' }).reliability.floorE4).toBe(10_000);
    expect(load({ ARK_RELIABILITY_FLOOR: '0' }).reliability.floorE4).toBe(0);
  });

  it('refuses bad values, naming the variable', () => {
    for (const [name, value] of [
      ['ARK_RELIABILITY_FLOOR', '1.2'],
      ['ARK_RELIABILITY_FLOOR', '0.98765'],
      ['ARK_RELIABILITY_FLOOR', 'high'],
      ['ARK_RELIABILITY_WINDOW_S', '10'],
      ['ARK_RELIABILITY_WINDOW_S', 'month'],
      ['ARK_RELIABILITY_MIN_HISTORY_S', '-1'],
      ['ARK_RELIABILITY_INTERVAL_MS', '0'],
    ] as const) {
      expect(() => load({ [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      expect(() => load({ [name]: value }), `${name}=${value}`).toThrow(name);
    }
  });
});
