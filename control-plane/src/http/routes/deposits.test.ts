import { pbkdf2Sync } from 'node:crypto';
import { HDKey } from '@scure/bip32';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { paymentsConfigFrom } from '../../config/payments.js';
import { upsertSeenDeposits } from '../../store/deposits.js';
import { bearer, createTestApp, seedAccount, type TestApp, testConfig } from '../../testing/app.js';
import { DIALECTS } from '../../testing/stores.js';
import { writeChainsFile } from '../../testing/deposits.js';

// The development mnemonic: child 0/0 of its account key is anvil's first account, a public fact to check against.
const seed = pbkdf2Sync('test test test test test test test test test test test junk', 'mnemonic', 2048, 64, 'sha512');
const XPUB = HDKey.fromMasterSeed(seed).derive("m/44'/60'/0'").publicExtendedKey;

describe.each(DIALECTS)('deposit address and deposit history on %s', (dialect) => {
  let unconfigured: TestApp<ManualClock>;
  let t: TestApp<ManualClock>;
  beforeAll(async () => {
    unconfigured = await createTestApp(dialect);
    const payments = paymentsConfigFrom(
      { ARK_CHAINS: writeChainsFile(), ARK_DEPOSIT_XPUB: XPUB, ARK_BALANCE_CAP_MICRO: '50000000' },
      (m) => new Error(m),
    );
    t = await createTestApp(dialect, { configOverrides: { payments: { ...testConfig().payments, ...payments } } });
  });
  afterAll(async () => {
    await unconfigured.destroy();
    await t.destroy();
  });

  const address = (app: TestApp<ManualClock>, token: string) =>
    app.app.inject({ method: 'GET', url: '/api/v1/billing/deposit-address', headers: bearer(token) });

  it('answers 503 UNAVAILABLE, retryable, while deposits are not configured', async () => {
    const renter = await seedAccount(unconfigured.ctx);
    const response = await address(unconfigured, renter.apiKey);
    expect(response.statusCode).toBe(503);
    expect(response.json().error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
  });

  it('gives each account its own address, child 0/i of the xpub, created once and never changed', async () => {
    const first = await seedAccount(t.ctx);
    const second = await seedAccount(t.ctx);
    const a = await address(t, first.apiKey);
    expect(a.statusCode).toBe(200);
    expect(a.json()).toMatchObject({
      chain_id: 8453,
      network: 'base',
      address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      min_deposit_micro: '1000000',
      max_deposit_micro: '50000000',
      finalized_block_number: null,
      deposits: [],
    });
    expect(a.json().networks.map((n: { name: string }) => n.name)).toEqual(['base']);
    expect(a.json().assets.map((x: { symbol: string }) => x.symbol)).toEqual(['USDC', 'ETH']);
    expect((await address(t, first.apiKey)).json().address).toBe(a.json().address);
    const b = (await address(t, second.apiKey)).json();
    expect(b.address).toBe('0x70997970C51812dc3A010C7d01b50e0d17dc79C8');
  });

  it('pages the deposits in the balance view, newest first, with state, network and tx hash', async () => {
    const renter = await seedAccount(t.ctx);
    await address(t, renter.apiKey);
    const rows = Array.from({ length: 25 }, (_, i) => ({
      chainId: 8453,
      network: 'base',
      txHash: `0x${i.toString(16).padStart(64, '0')}`,
      logIndex: 0,
      accountId: renter.accountId,
      address: `0x${'1'.repeat(40)}`,
      asset: 'USDC',
      tokenAddress: `0x${'2'.repeat(40)}`,
      amountRaw: 1_000_000n,
      decimals: 6,
      amountMicro: 1_000_000n,
      blockNumber: BigInt(100 + i),
      blockHash: `0x${'3'.repeat(64)}`,
      fromAddress: null,
    }));
    for (const row of rows) {
      await t.clock.advance(1000);
      await t.store.db.transaction().execute((trx) => upsertSeenDeposits(trx, [row], t.clock.now()));
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/api/v1/billing/balance?limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = (await t.app.inject({ method: 'GET', url, headers: bearer(renter.apiKey) })).json();
      for (const d of page.deposits.items) {
        expect(d).toMatchObject({
          state: 'SEEN',
          network: 'base',
          chain_id: 8453,
          asset: 'USDC',
          amount_micro: '1000000',
          credited_micro: null,
        });
        seen.push(d.tx_hash);
      }
      cursor = page.deposits.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual(rows.map((r) => r.txHash).reverse());
  });
});
