// `ark topup` and `ark deposit` against a started control plane, on each store, with anvil playing Base (TestUsdc at
// the real USDC address, deposit-helpers.ts): the CLI pays an x402 top-up from a wallet key file with the official
// client and the credit lands once after finality; the deposit address (and its QR code) is the account's own. Only
// `ark`'s --json output and exit codes are read, beside the chain itself.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Anvil, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { waitFor } from '../harness/processes.js';
import { ark, arkConfigDir, expectExit } from './cli-helpers.js';
import { BASE_USDC, type DepositChain, randomDepositXpub, renterKey, setupDepositChain, x402Setup } from './deposit-helpers.js';
import { type ControlPlane, startControlPlane } from './host-side-helpers.js';
import { DIALECTS } from './rental-helpers.js';

const USDC = 1_000_000n;

describe.each(DIALECTS)('ark topup and deposit on %s', (dialect) => {
  let anvil: Anvil;
  let chain: DepositChain;
  let database: TestDatabase | undefined;
  let cp: ControlPlane;
  let env: NodeJS.ProcessEnv;
  let walletFile: string;
  let payer: Address;
  let treasury: Address;

  beforeAll(async () => {
    anvil = await startAnvil();
    chain = await setupDepositChain(anvil);
    if (dialect === 'postgres') database = await createTestDatabase();
    const payerKey = generatePrivateKey();
    payer = privateKeyToAccount(payerKey).address;
    await chain.sendUsdc(payer, 20n * USDC);
    const x402 = await x402Setup(chain, anvil);
    treasury = x402.treasury;
    const dir = mkdtempSync(join(tmpdir(), 'ark-cli-billing-'));
    walletFile = join(dir, 'wallet.key');
    writeFileSync(walletFile, `${payerKey}\n`, { mode: 0o600 });
    chmodSync(walletFile, 0o600);
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: { ...x402.env, ARK_DEPOSIT_XPUB: randomDepositXpub() },
    });
    const key = await renterKey(cp, `cli-billing-${randomBytes(4).toString('hex')}@example.test`);
    env = { ARK_URL: cp.base, ARK_API_KEY: key, ARK_CONFIG_DIR: arkConfigDir() };
  }, 240_000);

  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
    await anvil?.stop();
    await database?.drop();
  });

  it('topup pays 5 USDC over x402 from the wallet key file; the credit lands once after finality', { timeout: 120_000 }, async () => {
    const paid = expectExit(await ark(['topup', '--amount', '5', '--wallet-key-file', walletFile, '--json'], { env }), 0);
    expect(paid.json).toMatchObject({ state: 'PENDING_FINALITY', amount_micro: '5000000', payer, network: 'base' });
    expect(paid.json.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    const treasuryUsdc = (await chain.public.readContract({
      address: BASE_USDC,
      abi: chain.contracts.TestUsdc.abi,
      functionName: 'balanceOf',
      args: [treasury],
    } as never)) as bigint;
    expect(treasuryUsdc).toBe(5n * USDC);

    await anvil.mine(3);
    const balance = await waitFor(
      async () => {
        const run = await ark(['balance', '--json'], { env });
        return run.json?.available_micro === '5000000' ? run.json : null;
      },
      { timeoutMs: 60_000, intervalMs: 500, description: 'the top-up credited' },
    );
    expect(balance.top_ups.items).toEqual([
      expect.objectContaining({ state: 'CONFIRMED', credited_micro: '5000000', tx_hash: paid.json.tx_hash }),
    ]);

    // A key file others can read is refused before anything is signed (usage, 2).
    const loose = join(mkdtempSync(join(tmpdir(), 'ark-cli-loose-')), 'wallet.key');
    writeFileSync(loose, `${generatePrivateKey()}\n`, { mode: 0o644 });
    chmodSync(loose, 0o644);
    const refused = await ark(['topup', '--amount', '1', '--wallet-key-file', loose, '--json'], { env });
    expectExit(refused, 2);
    expect(refused.json.error.message).toMatch(/chmod 600/);
    // Below the server's minimum: its 422 is a usage error too.
    expectExit(await ark(['topup', '--amount', '0.5', '--wallet-key-file', walletFile, '--json'], { env }), 2);
  });

  it('deposit shows the account’s address, the same each time, with a QR code when asked', async () => {
    const first = expectExit(await ark(['deposit', '--json'], { env }), 0);
    expect(first.json).toMatchObject({ chain_id: 8453, network: 'base' });
    expect(first.json.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(first.json.qr).toBeUndefined();
    const withQr = expectExit(await ark(['deposit', '--qr'], { env }), 0);
    expect(withQr.stdout.split('\n')[0]).toBe(first.json.address);
    // The QR code is drawn with block characters, many lines of them.
    expect(withQr.stdout.split('\n').filter((line) => /[▀▄█]/.test(line)).length).toBeGreaterThan(10);
  });
});
