// The treasury against the ledger, end to end (issue 22): one anvil playing Base (TestUsdc at the real USDC address,
// an 18-decimal stablecoin, a mock ETH/USD feed, Multicall3 at its canonical address), the real control plane on
// SQLite and on PostgreSQL. A renter deposits; `ark-cp treasury reconcile` finds no deficit; the sweep plan is signed
// as an offline signer would (the deposit address's key from the seed, EIP-3009) and sent by another wallet; then
// funds leave the treasury behind the ledger's back, and the command, the worker's gauge, the alert sink, the fleet
// read and the console's Fleet page all show the deficit.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Address, bytesToHex, type Hex, parseEther, parseSignature } from 'viem';
import { HDKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANVIL_ACCOUNTS, type Anvil, installMulticall3, startAnvil } from '../harness/anvil.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { waitFor } from '../harness/processes.js';
import { type DepositChain, renterKey, setupDepositChain } from './deposit-helpers.js';
import { api, type ControlPlane, controlPlaneCli, repoRoot, startControlPlane } from './host-side-helpers.js';
import { fundedPayoutWallet, PASSWORD, randomAddress, USDC } from './payout-helpers.js';
import { controlPlaneBundle } from '../harness/bundles.js';

const TUSD = 10n ** 18n;
const FINALITY_BLOCKS = 2;

/** `ark-cp` with its exit code (the deficit exits 3), its stdout and stderr. */
function cpCommand(cp: ControlPlane, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [controlPlaneBundle, ...args],
      { cwd: repoRoot, env: { ...process.env, ...cp.env }, timeout: 60_000, encoding: 'utf8' },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let anvil: Anvil;
let chain: DepositChain;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = await setupDepositChain(anvil);
  await installMulticall3(anvil);
}, 120_000);

afterAll(async () => {
  await anvil?.stop();
});

describe.each(['sqlite', 'postgres'] as const)('treasury reconciliation on %s', (dialect) => {
  let database: TestDatabase | null = null;
  let cp: ControlPlane;
  let receiver: Server;
  const alerts: any[] = [];
  // The deposit seed stays with the test, as it stays with the offline signer; the server gets only the xpub.
  const seed = randomBytes(32);
  const accountKey = HDKey.fromMasterSeed(seed).derive("m/44'/60'/0'");
  const treasury = randomAddress();
  let depositAddress: Address;

  const reconcile = async (expectedCode: number) => {
    const run = await cpCommand(cp, ['treasury', 'reconcile']);
    expect(run.code, run.stderr).toBe(expectedCode);
    return JSON.parse(run.stdout);
  };
  const assetOf = (report: any, symbol: string) => report.networks[0].assets.find((a: any) => a.symbol === symbol);
  const finalize = () => anvil.mine(FINALITY_BLOCKS);

  beforeAll(async () => {
    if (dialect === 'postgres') database = await createTestDatabase();
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        alerts.push(JSON.parse(body));
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const wallet = await fundedPayoutWallet(chain, anvil, 10n * USDC);
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: {
        ARK_CHAINS: chain.chainsFile,
        ARK_DEPOSIT_XPUB: accountKey.publicExtendedKey,
        ARK_TREASURY_ADDRESS: treasury,
        ARK_PAYOUT_KEY_FILE: wallet.keyFile,
        ARK_ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`,
        ARK_SECRET_KEY: randomBytes(32).toString('hex'),
        ARK_CHAIN_POLL_INTERVAL_MS: '100',
        ARK_RECONCILE_INTERVAL_MS: '300',
        ARK_BALANCE_CAP_MICRO: '0',
      },
    });
  }, 240_000);

  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
    await new Promise((resolve) => receiver?.close(resolve));
    await database?.drop();
  });

  it('finds no deficit when every deposit the ledger credited is on chain, and shows native coins apart', {
    timeout: 180_000,
  }, async () => {
    const token = await renterKey(cp, `treasury-${randomBytes(4).toString('hex')}@example.test`);
    const address = await api(cp.base, 'GET', '/api/v1/billing/deposit-address', { token });
    expect(address.status).toBe(200);
    depositAddress = address.body.address;
    // The server derived child 0/0 of the xpub: the signer's key for it is at m/44'/60'/0'/0/0.
    expect(depositAddress.toLowerCase()).toBe(privateKeyToAccount(childKey(0)).address.toLowerCase());

    // 40 USDC, 5 of the 18-decimal stablecoin and 0.001 ETH (credited at 3000 USD less 1 %: 2.97 USD).
    await chain.sendUsdc(depositAddress, 40n * USDC);
    await chain.sendStable18(depositAddress, 5n * TUSD);
    await chain.sendEth(depositAddress, parseEther('0.001'));
    const owed = 40n * USDC + 5n * USDC + 2_970_000n;
    await waitFor(
      async () => {
        await anvil.mine(1);
        const balance = await api(cp.base, 'GET', '/api/v1/billing/balance', { token });
        return balance.body.available_micro === owed.toString();
      },
      { timeoutMs: 60_000, intervalMs: 100, description: 'the three deposits credited' },
    );

    const report = await reconcile(0);
    // Stablecoins: the deposits' 45 and the payout wallet's 10; owed: what the renter holds.
    expect(report).toMatchObject({
      trigger: 'cli',
      status: 'surplus',
      asset: 'USD',
      liabilities: { available_micro: owed.toString(), total_micro: owed.toString(), owed_micro: owed.toString(), in_flight_micro: '0' },
      stablecoins_micro: (55n * USDC).toString(),
      surplus_micro: (55n * USDC - owed).toString(),
      deficit_micro: '0',
      addresses: 3,
      deposit_addresses: 1,
      multicalls: 1,
      alert: null,
    });
    expect(assetOf(report, 'USDC')).toMatchObject({
      kind: 'stablecoin',
      treasury_raw: '0',
      payout_wallet_raw: (10n * USDC).toString(),
      deposit_addresses_raw: (40n * USDC).toString(),
      value_micro: (50n * USDC).toString(),
    });
    expect(assetOf(report, 'TUSD')).toMatchObject({ deposit_addresses_raw: (5n * TUSD).toString(), value_micro: (5n * USDC).toString() });
    // ETH is information: the deposit's 0.001 ETH is worth 3 USD at the oracle price, and is not in stablecoins_micro.
    expect(assetOf(report, 'ETH')).toMatchObject({ kind: 'native', deposit_addresses_raw: parseEther('0.001').toString() });
    expect(BigInt(report.native_value_micro)).toBeGreaterThanOrEqual(3_000_000n);
    expect(alerts).toHaveLength(0);
  });

  it('plans the sweep for an offline signer; the signed USDC authorization, sent by another wallet, moves it to the treasury', {
    timeout: 180_000,
  }, async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ark-sweep-')), 'plan.json');
    const written = await controlPlaneCli(cp, ['treasury', 'sweep-plan', '--out', file, '--valid-hours', '2']);
    expect(written).toContain(`3 transfers on 1 networks written to ${file}`);
    chmodSync(file, 0o600);
    const document = JSON.parse(readFileSync(file, 'utf8'));
    const [plan] = document.plans;
    expect(plan).toMatchObject({ network: 'base', chain_id: 8453, treasury: treasury.toLowerCase() });
    const byAsset = Object.fromEntries(plan.transfers.map((t: any) => [t.asset, t]));
    expect(byAsset.TUSD).toMatchObject({ method: 'transfer', sender: 'deposit_address', amount_raw: (5n * TUSD).toString() });
    expect(byAsset.ETH).toMatchObject({ method: 'native_transfer', balance_raw: parseEther('0.001').toString() });
    const usdc = byAsset.USDC;
    expect(usdc).toMatchObject({
      method: 'transferWithAuthorization',
      derivation_path: "m/44'/60'/0'/0/0",
      from: depositAddress.toLowerCase(),
      to: treasury.toLowerCase(),
      amount_raw: (40n * USDC).toString(),
      sender: 'gas_wallet',
      typed_data: { domain: { name: 'USD Coin', version: '2', chainId: 8453 }, primaryType: 'TransferWithAuthorization' },
    });

    // Offline: the key at the plan's path signs the typed data (as control-plane/README.md shows).
    const signer = privateKeyToAccount(childKey(Number(usdc.derivation_path.split('/').pop())));
    const m = usdc.typed_data.message;
    const message = {
      from: m.from as Address,
      to: m.to as Address,
      value: BigInt(m.value),
      validAfter: BigInt(m.validAfter),
      validBefore: BigInt(m.validBefore),
      nonce: m.nonce as Hex,
    };
    const { EIP712Domain: _, ...types } = usdc.typed_data.types;
    const signature = await signer.signTypedData({
      domain: usdc.typed_data.domain,
      types,
      primaryType: 'TransferWithAuthorization',
      message,
    });
    // Online: a wallet with gas (not the deposit address, which has none to spare) sends it.
    const { v, r, s } = parseSignature(signature);
    const hash = await chain.wallet.writeContract({
      address: usdc.token,
      abi: chain.contracts.TestUsdc.abi,
      functionName: 'transferWithAuthorization',
      args: [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, Number(v), r, s],
      account: ANVIL_ACCOUNTS[1],
      chain: null,
    } as never);
    expect((await chain.public.waitForTransactionReceipt({ hash, pollingInterval: 20 })).status).toBe('success');
    await finalize();

    // The server's worker reads it at the next finalized block: the treasury holds the 40 USDC, the deposit address none.
    await waitFor(
      async () => {
        const metrics = await (await fetch(`${cp.base}/metrics`)).text();
        return (
          metrics.includes('ark_treasury_holdings{network="base",asset="USDC",place="treasury"} 40\n') &&
          metrics.includes('ark_treasury_holdings{network="base",asset="USDC",place="deposit_addresses"} 0\n')
        );
      },
      { timeoutMs: 30_000, intervalMs: 100, description: 'the worker to read the swept USDC in the treasury' },
    );
    expect(await (await fetch(`${cp.base}/metrics`)).text()).toContain(
      `ark_treasury_surplus_micro{asset="USD"} ${55n * USDC - 47_970_000n}`,
    );
    expect(alerts).toHaveLength(0);
  });

  it('reports the deficit, alerts and sets the gauge once treasury funds leave behind the ledger’s back', {
    timeout: 180_000,
  }, async () => {
    // Someone with the treasury's key sends 30 USDC away; the ledger never hears of it.
    await anvil.rpc('anvil_impersonateAccount', [treasury]);
    await anvil.rpc('anvil_setBalance', [treasury, `0x${parseEther('1').toString(16)}`]);
    const hash = await chain.wallet.writeContract({
      address: chain.usdc,
      abi: chain.contracts.TestUsdc.abi,
      functionName: 'transfer',
      args: [randomAddress(), 30n * USDC],
      account: treasury,
      chain: null,
    } as never);
    expect((await chain.public.waitForTransactionReceipt({ hash, pollingInterval: 20 })).status).toBe('success');
    await anvil.rpc('anvil_stopImpersonatingAccount', [treasury]);
    await finalize();

    const owed = 47_970_000n;
    const held = 25n * USDC; // 10 left in the treasury, 10 in the payout wallet, 5 TUSD
    const deficit = owed - held;
    const report = await reconcile(3);
    expect(report).toMatchObject({
      status: 'deficit',
      stablecoins_micro: held.toString(),
      surplus_micro: (-deficit).toString(),
      deficit_micro: deficit.toString(),
      alert: { delivered: true },
    });
    const fromCli = alerts.find((a) => a.details.trigger === 'cli');
    expect(fromCli).toMatchObject({
      source: 'ark-control-plane',
      alert: 'treasury_deficit',
      severity: 'critical',
      details: { deficit_micro: deficit.toString(), owed_micro: owed.toString(), stablecoins_micro: held.toString() },
    });

    // The server's worker finds it too: its gauge, its own alert, the fleet read and the Fleet page.
    await waitFor(
      async () => {
        const metrics = await (await fetch(`${cp.base}/metrics`)).text();
        return metrics.includes(`ark_treasury_surplus_micro{asset="USD"} ${-deficit}`);
      },
      { timeoutMs: 30_000, intervalMs: 100, description: 'the surplus gauge to show the deficit' },
    );
    const metrics = await (await fetch(`${cp.base}/metrics`)).text();
    expect(metrics).toContain(`ark_treasury_owed_micro{asset="USD"} ${owed}`);
    expect(metrics).toContain('ark_treasury_holdings{network="base",asset="USDC",place="treasury"} 10');
    expect(alerts.find((a) => a.details.trigger === 'worker')).toMatchObject({
      alert: 'treasury_deficit',
      details: { deficit_micro: deficit.toString() },
    });

    const email = `operator-${randomBytes(4).toString('hex')}@example.test`;
    await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'admin', '--password', PASSWORD, '--verified']);
    const session = await api(cp.base, 'POST', '/api/v1/auth/sessions', { body: { email, password: PASSWORD } });
    const fleet = await api(cp.base, 'GET', '/api/v1/admin/fleet', { token: session.body.session_token });
    expect(fleet.status).toBe(200);
    expect(fleet.body.treasury).toMatchObject({ trigger: 'worker', status: 'deficit', deficit_micro: deficit.toString() });

    const page = await consolePage(cp, email, '/console/admin');
    expect(page).toMatch(/id="treasury-status" class="state state-deficit"[^>]*>deficit of \$22\.97</);
    expect(page).toContain('data-asset="base:USDC"');
  });

  /** The private key of deposit address `index` (m/44'/60'/0'/0/index), as the offline signer derives it. */
  function childKey(index: number): Hex {
    const key = accountKey.deriveChild(0).deriveChild(index).privateKey;
    if (!key) throw new Error('no private key');
    return bytesToHex(key);
  }
});

/** Signs in to the console with a password (a cookie jar of one session) and reads a page's HTML. */
async function consolePage(cp: ControlPlane, email: string, path: string): Promise<string> {
  const jar = new Map<string, string>();
  const keep = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = (pair ?? '').indexOf('=');
      jar.set((pair ?? '').slice(0, at), (pair ?? '').slice(at + 1));
    }
  };
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const login = await fetch(`${cp.base}/console/login`);
  keep(login);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())?.[1] ?? '';
  const posted = await fetch(`${cp.base}/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, email, password: PASSWORD }).toString(),
  });
  expect(posted.status).toBe(303);
  keep(posted);
  const page = await fetch(`${cp.base}${path}`, { headers: { cookie: cookie() } });
  expect(page.status).toBe(200);
  return page.text();
}
