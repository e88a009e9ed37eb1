import { readFileSync } from 'node:fs';
import { createPublicClient, encodeFunctionData, http, keccak256, parseAbi, type PrivateKeyAccount, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { Hex } from './reader.js';

// The payout wallet: what the payer needs from a chain to send USDC, and nothing more. Signing is local (the key
// never leaves the process); the node only ever sees signed bytes.

const ERC20 = parseAbi([
  'function transfer(address to, uint256 value) returns (bool)',
  'function balanceOf(address) view returns (uint256)',
]);

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

export interface SignedTransfer {
  raw: Hex;
  hash: Hex;
}

export interface TransferReceipt {
  success: boolean;
  blockNumber: bigint;
  /** Gas used times the effective price, in wei. */
  feeWei: bigint;
}

/** An EIP-1559 `transfer(to, amount)` call of `token` at `nonce`. */
export interface TransferToSign {
  chainId: number;
  token: Hex;
  to: Hex;
  amount: bigint;
  nonce: bigint;
  gas: bigint;
  fees: Fees;
}

export interface PayoutWallet {
  readonly address: Hex;
  chainId(): Promise<number>;
  /** The next nonce the node would accept from the wallet, pending transactions counted. */
  pendingNonce(): Promise<bigint>;
  fees(): Promise<Fees>;
  /** An EIP-1559 `transfer(to, amount)` call of `token`, signed at `nonce`; nothing is sent. */
  signTransfer(input: {
    chainId: number;
    token: Hex;
    to: Hex;
    amount: bigint;
    nonce: bigint;
    gas: bigint;
    fees: Fees;
  }): Promise<SignedTransfer>;
  /** Sends signed bytes. A node that already has them, or has mined that nonce, is not an error: `known`. */
  broadcast(raw: Hex): Promise<'sent' | 'known'>;
  receipt(hash: Hex): Promise<TransferReceipt | null>;
  finalizedBlock(): Promise<bigint>;
  tokenBalance(token: Hex): Promise<bigint>;
  nativeBalance(): Promise<bigint>;
}

/** Reads the key file: one 0x-prefixed (or bare) 32-byte hex private key, surrounding whitespace ignored. */
export function readPayoutKey(path: string): Hex {
  const text = readFileSync(path, 'utf8').trim();
  const hex = text.startsWith('0x') ? text.slice(2) : text;
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error(`${path} does not hold a 32-byte hex private key`);
  return `0x${hex.toLowerCase()}`;
}

export class ViemPayoutWallet implements PayoutWallet {
  readonly address: Hex;
  readonly #account: PrivateKeyAccount;
  readonly #client: PublicClient;

  constructor(options: { rpcUrl: string; privateKey: Hex; timeoutMs?: number }) {
    this.#account = privateKeyToAccount(options.privateKey);
    this.address = this.#account.address.toLowerCase() as Hex;
    this.#client = createPublicClient({ transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: 2 }) });
  }

  chainId(): Promise<number> {
    return this.#client.getChainId();
  }

  async pendingNonce(): Promise<bigint> {
    return BigInt(await this.#client.getTransactionCount({ address: this.#account.address, blockTag: 'pending' }));
  }

  async fees(): Promise<Fees> {
    const fees = await this.#client.estimateFeesPerGas({ type: 'eip1559', chain: null });
    return { maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
  }

  async signTransfer(input: {
    chainId: number;
    token: Hex;
    to: Hex;
    amount: bigint;
    nonce: bigint;
    gas: bigint;
    fees: Fees;
  }): Promise<SignedTransfer> {
    const raw = await this.#account.signTransaction({
      type: 'eip1559',
      chainId: input.chainId,
      nonce: Number(input.nonce),
      to: input.token,
      value: 0n,
      gas: input.gas,
      maxFeePerGas: input.fees.maxFeePerGas,
      maxPriorityFeePerGas: input.fees.maxPriorityFeePerGas,
      data: encodeFunctionData({ abi: ERC20, functionName: 'transfer', args: [input.to, input.amount] }),
    });
    return { raw, hash: keccak256(raw) };
  }

  async broadcast(raw: Hex): Promise<'sent' | 'known'> {
    try {
      await this.#client.sendRawTransaction({ serializedTransaction: raw });
      return 'sent';
    } catch (error) {
      const text = `${(error as Error).message} ${(error as { details?: string }).details ?? ''}`.toLowerCase();
      if (/already known|known transaction|nonce too low|already imported|replacement transaction underpriced/.test(text)) return 'known';
      throw error;
    }
  }

  async receipt(hash: Hex): Promise<TransferReceipt | null> {
    try {
      const r = await this.#client.getTransactionReceipt({ hash });
      return { success: r.status === 'success', blockNumber: r.blockNumber, feeWei: r.gasUsed * r.effectiveGasPrice };
    } catch (error) {
      if ((error as { name?: string }).name === 'TransactionReceiptNotFoundError') return null;
      throw error;
    }
  }

  async finalizedBlock(): Promise<bigint> {
    return (await this.#client.getBlock({ blockTag: 'finalized' })).number;
  }

  tokenBalance(token: Hex): Promise<bigint> {
    return this.#client.readContract({ address: token, abi: ERC20, functionName: 'balanceOf', args: [this.#account.address] });
  }

  nativeBalance(): Promise<bigint> {
    return this.#client.getBalance({ address: this.#account.address });
  }
}
