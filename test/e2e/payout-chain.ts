// The vitest-free part of the money-out helpers (the cluster bench imports it outside vitest): the payout wallet, a
// fresh address to pay, the USDC transfers on chain.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Address, type Hex, parseAbiItem } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Anvil } from '../harness/anvil.js';
import { BASE_USDC, type DepositChain } from './deposit-helpers.js';

export const USDC = 1_000_000n;
export const PASSWORD = 'correct horse battery staple';
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

export interface PayoutWalletSetup {
  keyFile: string;
  address: Address;
}

/** A fresh payout key in a 0600 file, the wallet funded with gas and `usdc` micro-USDC. */
export async function fundedPayoutWallet(chain: DepositChain, anvil: Anvil, usdc: bigint): Promise<PayoutWalletSetup> {
  const key = generatePrivateKey();
  const dir = mkdtempSync(join(tmpdir(), 'ark-payout-'));
  const keyFile = join(dir, 'payout.key');
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  const address = privateKeyToAccount(key).address;
  await anvil.rpc('anvil_setBalance', [address, '0x8ac7230489e80000']);
  await chain.sendUsdc(address, usdc);
  return { keyFile, address };
}

/** A fresh EOA to be paid. */
export const randomAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address;

/** Every USDC Transfer log from `from` to `to` on chain (each one a payment). */
export async function transfersOnChain(
  chain: DepositChain,
  from: Address,
  to?: Address,
): Promise<Array<{ to: Address; value: bigint; txHash: Hex }>> {
  const logs = await chain.public.getLogs({
    address: BASE_USDC,
    event: TRANSFER,
    args: { from, ...(to ? { to } : {}) },
    fromBlock: 0n,
    toBlock: 'latest',
  });
  return logs.map((log) => ({ to: log.args.to as Address, value: log.args.value as bigint, txHash: log.transactionHash as Hex }));
}
