import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSettlementKey, x402ConfigFrom } from './x402.js';
import type { ChainsConfig } from '../domain/payments/chains.js';

const KEY = `0x${'1f'.repeat(32)}`;
const TREASURY = '0x1111111111111111111111111111111111111111';
const chains: ChainsConfig = {
  networks: [
    {
      name: 'base',
      chainId: 8453,
      rpcUrl: 'http://127.0.0.1:8545',
      assets: [{ symbol: 'USDC', address: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', decimals: 6 }],
      native: null,
    },
  ],
};
const fail = (message: string) => new Error(message);
const keyFile = (content: string, mode: number) => {
  const file = join(mkdtempSync(join(tmpdir(), 'ark-x402-config-')), 'key');
  writeFileSync(file, content, { mode });
  chmodSync(file, mode);
  return file;
};
const enabled = (extra: Record<string, string> = {}) => ({
  ARK_X402_ENABLED: 'true',
  ARK_TREASURY_ADDRESS: TREASURY,
  ARK_SETTLEMENT_KEY_FILE: keyFile(`${KEY}\n`, 0o600),
  ...extra,
});

describe('x402 configuration', () => {
  it('is off by default, with the documented bounds', () => {
    expect(x402ConfigFrom({}, null, fail)).toEqual({
      enabled: false,
      treasury: null,
      settlementKeyFile: null,
      minMicro: 1_000_000n,
      maxMicro: 1_000_000_000n,
      maxTimeoutS: 300,
      pollIntervalMs: 2000,
    });
  });

  it('turns on with a treasury, a 0600 key file and USDC on the primary network', () => {
    const env = enabled({ ARK_TOPUP_MIN_MICRO: '500000', ARK_TOPUP_MAX_MICRO: '2000000' });
    const config = x402ConfigFrom(env, chains, fail);
    expect(config).toMatchObject({ enabled: true, treasury: TREASURY, minMicro: 500_000n, maxMicro: 2_000_000n });
    expect(readSettlementKey(config.settlementKeyFile as string)).toBe(KEY);
  });

  it('refuses a key file others may read, naming the file but never its content', () => {
    const env = enabled({ ARK_SETTLEMENT_KEY_FILE: keyFile(KEY, 0o644) });
    expect(() => x402ConfigFrom(env, chains, fail)).toThrow(/ARK_SETTLEMENT_KEY_FILE: .* \(chmod 600\), it is 644/);
    const garbage = enabled({ ARK_SETTLEMENT_KEY_FILE: keyFile('not a key', 0o600) });
    expect(() => x402ConfigFrom(garbage, chains, fail)).toThrow(/must hold one hex private key/);
    const almost = `${KEY.slice(0, 40)}zz`;
    const refused = (() => {
      try {
        x402ConfigFrom(enabled({ ARK_SETTLEMENT_KEY_FILE: keyFile(almost, 0o600) }), chains, fail);
        return null;
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(refused).toMatch(/must hold one hex private key/);
    expect(refused).not.toContain(almost.slice(2, 40));
  });

  it('refuses what cannot work: no chains, no USDC, no treasury, no key file, bad bounds', () => {
    expect(() => x402ConfigFrom(enabled(), null, fail)).toThrow(/needs ARK_CHAINS/);
    const noUsdc: ChainsConfig = { networks: [{ ...(chains.networks[0] as ChainsConfig['networks'][number]), assets: [] }] };
    expect(() => x402ConfigFrom(enabled(), noUsdc, fail)).toThrow(/USDC/);
    expect(() => x402ConfigFrom(enabled({ ARK_TREASURY_ADDRESS: 'nope' }), chains, fail)).toThrow(/ARK_TREASURY_ADDRESS/);
    expect(() => x402ConfigFrom(enabled({ ARK_SETTLEMENT_KEY_FILE: '' }), chains, fail)).toThrow(/ARK_SETTLEMENT_KEY_FILE must name/);
    expect(() => x402ConfigFrom({ ARK_X402_ENABLED: 'yes' }, chains, fail)).toThrow(/true or false/);
    expect(() => x402ConfigFrom({ ARK_TOPUP_MIN_MICRO: '0' }, chains, fail)).toThrow(/positive/);
    expect(() => x402ConfigFrom({ ARK_TOPUP_MIN_MICRO: '5', ARK_TOPUP_MAX_MICRO: '4' }, chains, fail)).toThrow(/must not be below/);
  });
});
