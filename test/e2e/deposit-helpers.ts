// The chain side of the deposit suites and bench: anvil as Base, TestUsdc placed at the real Base USDC address, an
// 18-decimal stablecoin and a mock ETH/USD aggregator deployed, and the ARK_CHAINS file naming them.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Address, createPublicClient, createWalletClient, defineChain, type Hex, http, parseEther } from 'viem';
import { generatePrivateKey, HDKey, privateKeyToAccount } from 'viem/accounts';
import { compileTestContracts, type TestContracts } from '../fixtures/contracts/compile.js';
import { ANVIL_ACCOUNTS, type Anvil } from '../harness/anvil.js';
import { type ControlPlane, controlPlaneCli } from './host-side-helpers.js';

export const BASE_USDC: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
/** 3000.00000000 USD per ETH, 8 decimals as Chainlink's ETH/USD. */
export const ETH_PRICE_ANSWER = 300_000_000_000n;

export interface DepositChain {
  anvil: Anvil;
  contracts: TestContracts;
  funder: Address;
  usdc: Address;
  stable18: Address;
  aggregator: Address;
  chainsFile: string;
  public: ReturnType<typeof createPublicClient>;
  wallet: ReturnType<typeof createWalletClient>;
  /** USDC (6 decimals) from the funder to `to`; resolves once mined. */
  sendUsdc(to: Address, amount: bigint): Promise<Hex>;
  sendStable18(to: Address, amount: bigint): Promise<Hex>;
  sendEth(to: Address, wei: bigint): Promise<Hex>;
  /** Sets the aggregator's answer, updated now (the latest block's time). */
  setPrice(answer: bigint, updatedAtS?: bigint): Promise<void>;
}

export async function setupDepositChain(anvil: Anvil, options: { maxBlocks?: number } = {}): Promise<DepositChain> {
  const contracts = compileTestContracts();
  const chain = defineChain({
    id: 8453,
    name: 'anvil-base',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [anvil.url] } },
  });
  const pub = createPublicClient({ chain, transport: http(anvil.url) });
  const funder = ANVIL_ACCOUNTS[0] as Address;
  const wallet = createWalletClient({ chain, account: funder, transport: http(anvil.url) });
  const mined = async (hash: Hex): Promise<Hex> => {
    const receipt = await pub.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
    return hash;
  };
  await anvil.rpc('anvil_setCode', [BASE_USDC, contracts.TestUsdc.deployedBytecode]);
  const deploy = async (name: 'TestStable18' | 'MockAggregator'): Promise<Address> => {
    const hash = await wallet.deployContract({ abi: contracts[name].abi, bytecode: contracts[name].bytecode, account: funder, chain });
    const receipt = await pub.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    if (!receipt.contractAddress) throw new Error(`${name} was not deployed`);
    return receipt.contractAddress;
  };
  const stable18 = await deploy('TestStable18');
  const aggregator = await deploy('MockAggregator');
  const write = (address: Address, name: keyof TestContracts, functionName: string, args: unknown[]) =>
    wallet.writeContract({ address, abi: contracts[name].abi, functionName, args, account: funder, chain } as never).then(mined);
  await write(BASE_USDC, 'TestUsdc', 'mint', [funder, 10n ** 15n]);
  await write(stable18, 'TestStable18', 'mint', [funder, 10n ** 30n]);
  const setPrice = async (answer: bigint, updatedAtS?: bigint) => {
    const at = updatedAtS ?? (await pub.getBlock({ blockTag: 'latest' })).timestamp;
    await write(aggregator, 'MockAggregator', 'set', [answer, at]);
  };
  await setPrice(ETH_PRICE_ANSWER);

  const dir = mkdtempSync(join(tmpdir(), 'ark-chains-'));
  const chainsFile = join(dir, 'chains.json');
  writeFileSync(
    chainsFile,
    JSON.stringify({
      networks: [
        {
          name: 'base',
          chain_id: 8453,
          rpc_url: anvil.url,
          assets: [
            { symbol: 'USDC', address: BASE_USDC, decimals: 6 },
            { symbol: 'TUSD', address: stable18, decimals: 18 },
          ],
          native: { symbol: 'ETH', decimals: 18, price_feed: aggregator, spread_bps: 100 },
        },
      ],
    }),
  );
  void options;
  return {
    anvil,
    contracts,
    funder,
    usdc: BASE_USDC,
    stable18,
    aggregator,
    chainsFile,
    public: pub,
    wallet,
    sendUsdc: (to, amount) => write(BASE_USDC, 'TestUsdc', 'transfer', [to, amount]),
    sendStable18: (to, amount) => write(stable18, 'TestStable18', 'transfer', [to, amount]),
    sendEth: (to, wei) => wallet.sendTransaction({ to, value: wei, account: funder, chain }).then(mined),
    setPrice,
  };
}

/** A fresh account-level xpub (m/44'/60'/0') from a random seed; the seed is thrown away, as on a server. */
export function randomDepositXpub(): string {
  return HDKey.fromMasterSeed(randomBytes(32)).derive("m/44'/60'/0'").publicExtendedKey;
}

export const oneEth = parseEther('1');

/** A verified renter account made with the CLI, and a renter API key of it (its secret). */
export async function renterKey(cp: Pick<ControlPlane, 'env'>, email: string): Promise<string> {
  await controlPlaneCli(cp, [
    'accounts',
    'create',
    '--email',
    email,
    '--role',
    'renter',
    '--password',
    'correct horse battery staple',
    '--verified',
  ]);
  return JSON.parse(await controlPlaneCli(cp, ['keys', 'create', '--email', email, '--scopes', 'renter', '--label', 'e2e']))
    .secret as string;
}

export interface X402Setup {
  /** The control plane's environment for x402 top-ups on this chain (fast polls). */
  env: Record<string, string>;
  /** Where payments go. */
  treasury: Address;
  /** The wallet that settles payments on chain (10 ETH for gas; its key in a 0600 file). */
  gasWallet: Address;
}

/** A fresh treasury and a funded settlement wallet, and the control-plane environment that turns x402 on. */
export async function x402Setup(chain: DepositChain, anvil: Anvil): Promise<X402Setup> {
  const treasury = privateKeyToAccount(generatePrivateKey()).address;
  const gasKey = generatePrivateKey();
  const gasWallet = privateKeyToAccount(gasKey).address;
  await anvil.rpc('anvil_setBalance', [gasWallet, `0x${parseEther('10').toString(16)}`]);
  const keyFile = join(mkdtempSync(join(tmpdir(), 'ark-x402-')), 'settlement.key');
  writeFileSync(keyFile, `${gasKey}\n`, { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  return {
    treasury,
    gasWallet,
    env: {
      ARK_CHAINS: chain.chainsFile,
      ARK_SECRET_KEY: randomBytes(32).toString('hex'),
      ARK_X402_ENABLED: 'true',
      ARK_TREASURY_ADDRESS: treasury,
      ARK_SETTLEMENT_KEY_FILE: keyFile,
      ARK_X402_POLL_INTERVAL_MS: '100',
      ARK_CHAIN_POLL_INTERVAL_MS: '100',
    },
  };
}
