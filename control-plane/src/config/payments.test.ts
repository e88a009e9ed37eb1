import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'ark-config-payments-'));
const file = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};
const base = { ARK_SECRET_KEY: 'a'.repeat(64), ARK_DATA_DIR: dir };
const error = (env: Record<string, string>) => {
  try {
    loadConfig({ ...base, ...env });
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  return null;
};

describe('payments configuration', () => {
  it('defaults: no networks, no xpub, a 10,000 USDC cap, a 1 USDC minimum', () => {
    const { payments } = loadConfig(base);
    expect(payments).toMatchObject({ chains: null, depositXpub: null, balanceCapMicro: 10_000_000_000n, minDepositMicro: 1_000_000n });
    expect(loadConfig({ ...base, ARK_BALANCE_CAP_MICRO: '0' }).payments.balanceCapMicro).toBeNull();
  });

  it('stops on a bad ARK_CHAINS file, naming the field', () => {
    const network = {
      name: 'base',
      chain_id: 8453,
      rpc_url: 'http://127.0.0.1:8545',
      assets: [{ symbol: 'USDC', address: `0x${'1'.repeat(40)}`, decimals: 6 }],
    };
    expect(error({ ARK_CHAINS: file('ok.json', JSON.stringify({ networks: [network] })) })).toBeNull();
    expect(error({ ARK_CHAINS: join(dir, 'missing.json') })).toMatch(/^ARK_CHAINS: cannot read/);
    expect(error({ ARK_CHAINS: file('garbage.json', '{nope') })).toMatch(/^ARK_CHAINS: .* is not JSON/);
    expect(error({ ARK_CHAINS: file('wrong-chain.json', JSON.stringify({ networks: [{ ...network, chain_id: 1 }] })) })).toMatch(
      /networks\[0\]\.chain_id must be 8453/,
    );
    expect(
      error({
        ARK_CHAINS: file(
          'bad-decimals.json',
          JSON.stringify({ networks: [{ ...network, assets: [{ ...network.assets[0], decimals: -1 }] }] }),
        ),
      }),
    ).toMatch(/networks\[0\]\.assets\[0\]\.decimals/);
  });

  it('refuses a bad xpub, an xprv, and bad amounts', () => {
    expect(error({ ARK_DEPOSIT_XPUB: 'xpub-nonsense' })).toMatch(/^ARK_DEPOSIT_XPUB is not a valid extended public key/);
    expect(error({ ARK_MIN_DEPOSIT_MICRO: '-1' })).toMatch(/^ARK_MIN_DEPOSIT_MICRO/);
    expect(error({ ARK_BALANCE_CAP_MICRO: '1.5' })).toMatch(/^ARK_BALANCE_CAP_MICRO/);
    expect(error({ ARK_PRICE_MAX_AGE_S: '0' })).toMatch(/^ARK_PRICE_MAX_AGE_S/);
  });
});
