// The HTTP edge and metrics variables (issue 7): defaults a production operator would pick, and refusals of values
// that cannot work. Every other variable is exercised by the code that uses it.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

const base = { ARK_SECRET_KEY: randomBytes(32).toString('hex'), ARK_DATA_DIR: '/nonexistent/ark-config-test' };
const load = (env: Record<string, string> = {}) => loadConfig({ ...base, ...env });

describe('edge and metrics configuration', () => {
  it('logs readable lines on a terminal and JSON elsewhere unless ARK_LOG_FORMAT says; refuses other formats', () => {
    expect(load().logFormat).toBe('json');
    expect(loadConfig(base, { stdoutIsTerminal: true }).logFormat).toBe('pretty');
    expect(loadConfig({ ...base, ARK_LOG_FORMAT: 'json' }, { stdoutIsTerminal: true }).logFormat).toBe('json');
    expect(load({ ARK_LOG_FORMAT: 'PRETTY' }).logFormat).toBe('pretty');
    expect(() => load({ ARK_LOG_FORMAT: 'xml' })).toThrow(ConfigError);
  });

  it('defaults: 60 s per request, 15 s for headers, 256 connections per address, /metrics on the API listener without a token', () => {
    const config = load();
    expect(config).toMatchObject({
      httpRequestTimeoutMs: 60_000,
      httpHeadersTimeoutMs: 15_000,
      httpMaxConnectionsPerAddress: 256,
      metricsPort: null,
      metricsToken: null,
    });
  });

  it('reads the variables', () => {
    const config = load({
      ARK_HTTP_REQUEST_TIMEOUT_S: '30',
      ARK_HTTP_HEADERS_TIMEOUT_S: '5',
      ARK_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
      ARK_METRICS_HOST: '127.0.0.5',
      ARK_METRICS_PORT: '9464',
      ARK_METRICS_TOKEN: 'a-long-enough-scrape-token',
    });
    expect(config).toMatchObject({
      httpRequestTimeoutMs: 30_000,
      httpHeadersTimeoutMs: 5_000,
      httpMaxConnectionsPerAddress: 0,
      metricsHost: '127.0.0.5',
      metricsPort: 9464,
      metricsToken: 'a-long-enough-scrape-token',
    });
    expect(load({ ARK_METRICS_PORT: '9464' }).metricsHost).toBe('127.0.0.1');
  });

  it.each([
    [{ ARK_HTTP_REQUEST_TIMEOUT_S: '0' }, /ARK_HTTP_REQUEST_TIMEOUT_S must be between/],
    [{ ARK_HTTP_REQUEST_TIMEOUT_S: '1.5' }, /must be an integer/],
    [{ ARK_HTTP_HEADERS_TIMEOUT_S: '120' }, /must not be longer than ARK_HTTP_REQUEST_TIMEOUT_S/],
    [{ ARK_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '-1' }, /ARK_HTTP_MAX_CONNECTIONS_PER_ADDRESS must be between/],
    [{ ARK_METRICS_PORT: '8080' }, /ARK_METRICS_PORT must differ from PORT/],
    [{ ARK_METRICS_PORT: '70000' }, /ARK_METRICS_PORT must be between/],
    [{ ARK_METRICS_HOST: '0.0.0.0' }, /ARK_METRICS_HOST needs ARK_METRICS_PORT/],
    [{ ARK_METRICS_TOKEN: 'short' }, /ARK_METRICS_TOKEN must be 16 to 512/],
    [{ ARK_METRICS_TOKEN: 'has a space in the middle' }, /ARK_METRICS_TOKEN/],
  ])('refuses %o', (env, message) => {
    expect(() => load(env as Record<string, string>)).toThrow(ConfigError);
    expect(() => load(env as Record<string, string>)).toThrow(message);
  });
});

describe('agent wallet configuration', () => {
  it('defaults: five-minute challenges, the terms published under the public URL', () => {
    const config = load({ ARK_PUBLIC_URL: 'https://ark.example.test/' });
    expect(config.agentChallengeTtlMs).toBe(300_000);
    expect(config.termsUrl).toBe('https://ark.example.test/terms');
  });
  it('reads the variables, and never lets a challenge outlive the contract’s five minutes', () => {
    const config = load({ ARK_AGENT_CHALLENGE_TTL_S: '3', ARK_TERMS_URL: 'https://terms.example.test/v3' });
    expect(config.agentChallengeTtlMs).toBe(3_000);
    expect(config.termsUrl).toBe('https://terms.example.test/v3');
    expect(() => load({ ARK_AGENT_CHALLENGE_TTL_S: '301' })).toThrow(/ARK_AGENT_CHALLENGE_TTL_S must be between 1 and 300/);
    expect(() => load({ ARK_AGENT_CHALLENGE_TTL_S: '0' })).toThrow(ConfigError);
  });
});

describe('spend-rate cap configuration', () => {
  it('defaults to 50 USDC an hour and reads ARK_SPEND_RATE_CAP_MICRO_PER_HOUR up to one MicroAmount', () => {
    expect(load().spendRateCapMicroPerHour).toBe(50_000_000n);
    expect(load({ ARK_SPEND_RATE_CAP_MICRO_PER_HOUR: '1' }).spendRateCapMicroPerHour).toBe(1n);
    expect(load({ ARK_SPEND_RATE_CAP_MICRO_PER_HOUR: '1000000000000000' }).spendRateCapMicroPerHour).toBe(1_000_000_000_000_000n);
  });

  it.each(['0', '-5', '1.5', 'lots', '1000000000000001'])('refuses %s, naming the variable', (value) => {
    expect(() => load({ ARK_SPEND_RATE_CAP_MICRO_PER_HOUR: value })).toThrow(ConfigError);
    expect(() => load({ ARK_SPEND_RATE_CAP_MICRO_PER_HOUR: value })).toThrow(/ARK_SPEND_RATE_CAP_MICRO_PER_HOUR/);
  });
});
