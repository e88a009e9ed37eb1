// The hardware self-test variables: the documented defaults, a benchmark image only by digest, refusals naming the variable.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

const base = { ARK_SECRET_KEY: randomBytes(32).toString('hex'), ARK_DATA_DIR: '/nonexistent/ark-config-test' };
const load = (env: Record<string, string> = {}) => loadConfig({ ...base, ...env });
const DIGEST = `ghcr.io/ark/selftest@sha256:${'ab'.repeat(32)}`;

describe('self-test configuration', () => {
  it('defaults: identity only (no benchmark image), a 10-minute bound, daily, the worker every minute', () => {
    expect(load().selftest).toEqual({ benchmarkImage: null, timeoutMs: 600_000, intervalMs: 86_400_000, workerIntervalMs: 60_000 });
  });

  it('reads the variables', () => {
    const config = load({
      ARK_SELFTEST_IMAGE: DIGEST,
      ARK_SELFTEST_TIMEOUT_S: '120',
      ARK_SELFTEST_INTERVAL_S: '3600',
      ARK_SELFTEST_WORKER_INTERVAL_MS: '200',
    });
    expect(config.selftest).toEqual({ benchmarkImage: DIGEST, timeoutMs: 120_000, intervalMs: 3_600_000, workerIntervalMs: 200 });
  });

  it('refuses bad values, naming the variable: an image by tag is never run', () => {
    for (const [name, value] of [
      ['ARK_SELFTEST_IMAGE', 'ghcr.io/ark/selftest:latest'],
      ['ARK_SELFTEST_IMAGE', 'ghcr.io/ark/selftest@sha256:abc'],
      ['ARK_SELFTEST_TIMEOUT_S', '5'],
      ['ARK_SELFTEST_TIMEOUT_S', '3600'],
      ['ARK_SELFTEST_INTERVAL_S', '10'],
      ['ARK_SELFTEST_WORKER_INTERVAL_MS', '0'],
    ] as const) {
      expect(() => load({ [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      expect(() => load({ [name]: value }), `${name}=${value}`).toThrow(name);
    }
  });
});
