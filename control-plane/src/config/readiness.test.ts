// The verified-readiness variables: the documented defaults, the bench's off switch, and refusals naming the variable.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

const base = { ARK_SECRET_KEY: randomBytes(32).toString('hex'), ARK_DATA_DIR: '/nonexistent/ark-config-test' };
const load = (env: Record<string, string> = {}) => loadConfig({ ...base, ...env });

describe('readiness configuration', () => {
  it('defaults: verification on, 3 s connect, 5 s handshake, 10 s engine, 32 at once, retries at most 5 s apart', () => {
    expect(load().readiness).toEqual({
      verify: true,
      connectTimeoutMs: 3_000,
      handshakeTimeoutMs: 5_000,
      engineTimeoutMs: 10_000,
      concurrency: 32,
      retryMaxMs: 5_000,
    });
  });

  it('reads the variables, the off switch included', () => {
    const config = load({
      ARK_READINESS_VERIFY: 'off',
      ARK_READINESS_CONNECT_TIMEOUT_MS: '500',
      ARK_READINESS_HANDSHAKE_TIMEOUT_MS: '700',
      ARK_READINESS_ENGINE_TIMEOUT_MS: '2000',
      ARK_READINESS_CONCURRENCY: '4',
      ARK_READINESS_RETRY_MAX_MS: '1000',
    });
    expect(config.readiness).toEqual({
      verify: false,
      connectTimeoutMs: 500,
      handshakeTimeoutMs: 700,
      engineTimeoutMs: 2000,
      concurrency: 4,
      retryMaxMs: 1000,
    });
    expect(load({ ARK_READINESS_VERIFY: 'ON' }).readiness.verify).toBe(true);
  });

  it('refuses bad values, naming the variable', () => {
    for (const [name, value] of [
      ['ARK_READINESS_VERIFY', 'maybe'],
      ['ARK_READINESS_CONNECT_TIMEOUT_MS', '0'],
      ['ARK_READINESS_HANDSHAKE_TIMEOUT_MS', 'soon'],
      ['ARK_READINESS_CONCURRENCY', '0'],
      ['ARK_READINESS_RETRY_MAX_MS', '10'],
    ] as const) {
      expect(() => load({ [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      expect(() => load({ [name]: value })).toThrow(name);
    }
  });
});
