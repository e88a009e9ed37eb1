import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

const base = { ARK_SECRET_KEY: randomBytes(32).toString('hex'), ARK_DATA_DIR: '/nonexistent/ark-config-test' };
const load = (env: Record<string, string> = {}) => loadConfig({ ...base, ...env });

describe('earnings configuration (issue 24 item 4)', () => {
  it('defaults to 24 h of maturity, the worker every minute', () => {
    expect(load().earnings).toEqual({ maturityS: 86_400, maturityIntervalMs: 60_000 });
  });

  it('reads ARK_EARNINGS_MATURITY_S; 0 turns maturity off', () => {
    expect(load({ ARK_EARNINGS_MATURITY_S: '3' }).earnings).toEqual({ maturityS: 3, maturityIntervalMs: 1_000 });
    expect(load({ ARK_EARNINGS_MATURITY_S: '0' }).earnings.maturityS).toBe(0);
  });

  it('refuses a value that is not a whole number of seconds up to 90 days', () => {
    for (const bad of ['-1', '1.5', 'a day', String(90 * 86_400 + 1)]) {
      expect(() => load({ ARK_EARNINGS_MATURITY_S: bad })).toThrow(ConfigError);
    }
  });
});
