import { authorizationTypes, eip3009ABI } from '@x402/evm';
import {
  createPublicClient,
  encodeFunctionData,
  getAddress,
  http,
  keccak256,
  parseAbi,
  parseEventLogs,
  type PublicClient,
  recoverTypedDataAddress,
} from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import type { Eip3009Authorization, Hex } from '../domain/payments/x402.js';

// What an x402 top-up needs from the primary network: read the authorization's state and the payer's balance,
// simulate and sign the settlement from our gas wallet, send signed bytes, and read receipts and finality. A narrow
// seam with a viem implementation (below); the gas wallet's key never leaves this file.

export interface SignedSettlement {
  gasWallet: Hex;
  gasNonce: bigint;
  rawTx: Hex;
  txHash: Hex;
}

export interface SettlementReceipt {
  success: boolean;
  blockNumber: bigint;
  blockHash: Hex;
  /** The index of the USDC Transfer log from the payer to `to` for `value` in this transaction, if there is one. */
  transferLogIndex: number | null;
}

export interface X402Chain {
  /** The gas wallet's address (lower-case). */
  readonly gasWallet: Hex;
  chainId(): Promise<number>;
  /** Whether the authorization's nonce is used or cancelled (EIP-3009 authorizationState). */
  authorizationUsed(token: Hex, from: Hex, nonce: Hex): Promise<boolean>;
  balanceOf(token: Hex, owner: Hex): Promise<bigint>;
  /** The address that signed the EIP-712 TransferWithAuthorization (USDC's domain on this chain), or null. */
  recoverSigner(
    token: Hex,
    domain: { name: string; version: string },
    authorization: Eip3009Authorization,
    signature: Hex,
  ): Promise<Hex | null>;
  /** Runs transferWithAuthorization from the gas wallet without sending it; the revert reason when it would fail. */
  simulate(token: Hex, authorization: Eip3009Authorization, signature: Hex): Promise<{ ok: true } | { ok: false; why: string }>;
  /** The gas wallet's next nonce as the node sees it (pending transactions included). */
  pendingNonce(): Promise<bigint>;
  /** Signs (does not send) transferWithAuthorization at the given gas-wallet nonce. */
  signSettlement(token: Hex, authorization: Eip3009Authorization, signature: Hex, gasNonce: bigint): Promise<SignedSettlement>;
  /** Sends signed bytes; sending the same bytes again is harmless (the node knows the hash). */
  broadcast(rawTx: Hex): Promise<void>;
  /** The receipt of a transaction and its Transfer log of `value` from `from` to `to`, or null while unmined. */
  receipt(txHash: Hex, transfer: { token: Hex; from: Hex; to: Hex; value: bigint }): Promise<SettlementReceipt | null>;
  /** The transaction that used the authorization (its AuthorizationUsed log), if any. */
  authorizationUsedBy(token: Hex, from: Hex, nonce: Hex): Promise<Hex | null>;
  latestTimeS(): Promise<bigint>;
  finalized(): Promise<{ number: bigint; hash: Hex }>;
  /** The canonical block hash at a height, or null. */
  blockHashAt(number: bigint): Promise<Hex | null>;
}

const EVENTS = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
]);

export interface ViemX402ChainOptions {
  rpcUrl: string;
  chainId: number;
  /** The gas wallet's private key (read from ARK_SETTLEMENT_KEY_FILE by the composition root). */
  settlementKey: Hex;
  timeoutMs?: number;
  /** Gas limit of one transferWithAuthorization (USDC's costs about 80k). */
  gasLimit?: bigint;
}

export class ViemX402Chain implements X402Chain {
  readonly gasWallet: Hex;
  readonly #client: PublicClient;
  readonly #account: PrivateKeyAccount;
  readonly #chainId: number;
  readonly #gasLimit: bigint;

  constructor(options: ViemX402ChainOptions) {
    this.#client = createPublicClient({ transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: 2 }) });
    this.#account = privateKeyToAccount(options.settlementKey);
    this.gasWallet = this.#account.address.toLowerCase() as Hex;
    this.#chainId = options.chainId;
    this.#gasLimit = options.gasLimit ?? 200_000n;
  }

  chainId(): Promise<number> {
    return this.#client.getChainId();
  }

  authorizationUsed(token: Hex, from: Hex, nonce: Hex): Promise<boolean> {
    return this.#client.readContract({
      address: token,
      abi: eip3009ABI,
      functionName: 'authorizationState',
      args: [getAddress(from), nonce],
    });
  }

  balanceOf(token: Hex, owner: Hex): Promise<bigint> {
    return this.#client.readContract({ address: token, abi: eip3009ABI, functionName: 'balanceOf', args: [getAddress(owner)] });
  }

  async recoverSigner(
    token: Hex,
    domain: { name: string; version: string },
    authorization: Eip3009Authorization,
    signature: Hex,
  ): Promise<Hex | null> {
    try {
      const signer = await recoverTypedDataAddress({
        domain: { ...domain, chainId: this.#chainId, verifyingContract: getAddress(token) },
        types: authorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: { ...authorization, from: getAddress(authorization.from), to: getAddress(authorization.to) },
        signature,
      });
      return signer.toLowerCase() as Hex;
    } catch {
      return null;
    }
  }

  async simulate(token: Hex, authorization: Eip3009Authorization, signature: Hex): Promise<{ ok: true } | { ok: false; why: string }> {
    try {
      await this.#client.simulateContract({
        account: this.#account,
        address: token,
        abi: eip3009ABI,
        functionName: 'transferWithAuthorization',
        args: args(authorization, signature),
      });
      return { ok: true };
    } catch (error) {
      return { ok: false, why: (error as { shortMessage?: string }).shortMessage ?? (error as Error).message };
    }
  }

  pendingNonce(): Promise<bigint> {
    return this.#client.getTransactionCount({ address: this.#account.address, blockTag: 'pending' }).then(BigInt);
  }

  async signSettlement(token: Hex, authorization: Eip3009Authorization, signature: Hex, gasNonce: bigint): Promise<SignedSettlement> {
    const fees = await this.#client.estimateFeesPerGas();
    const rawTx = await this.#account.signTransaction({
      type: 'eip1559',
      chainId: this.#chainId,
      nonce: Number(gasNonce),
      to: token,
      value: 0n,
      data: encodeFunctionData({ abi: eip3009ABI, functionName: 'transferWithAuthorization', args: args(authorization, signature) }),
      gas: this.#gasLimit,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
    return { gasWallet: this.gasWallet, gasNonce, rawTx, txHash: keccak256(rawTx).toLowerCase() as Hex };
  }

  async broadcast(rawTx: Hex): Promise<void> {
    try {
      await this.#client.sendRawTransaction({ serializedTransaction: rawTx });
    } catch (error) {
      // The node already has it (a re-send after a restart), or it is mined: both are the outcome we want.
      const text = `${(error as Error).message}`.toLowerCase();
      if (text.includes('already known') || text.includes('already imported') || text.includes('nonce too low')) return;
      throw error;
    }
  }

  async receipt(txHash: Hex, transfer: { token: Hex; from: Hex; to: Hex; value: bigint }): Promise<SettlementReceipt | null> {
    let receipt: Awaited<ReturnType<PublicClient['getTransactionReceipt']>>;
    try {
      receipt = await this.#client.getTransactionReceipt({ hash: txHash });
    } catch (error) {
      if ((error as { name?: string }).name === 'TransactionReceiptNotFoundError') return null;
      throw error;
    }
    const logs = parseEventLogs({ abi: EVENTS, logs: receipt.logs, eventName: 'Transfer', strict: true });
    const match = logs.find(
      (l) =>
        l.address.toLowerCase() === transfer.token &&
        l.args.from.toLowerCase() === transfer.from &&
        l.args.to.toLowerCase() === transfer.to &&
        l.args.value === transfer.value,
    );
    return {
      success: receipt.status === 'success',
      blockNumber: receipt.blockNumber,
      blockHash: receipt.blockHash.toLowerCase() as Hex,
      transferLogIndex: match?.logIndex ?? null,
    };
  }

  async authorizationUsedBy(token: Hex, from: Hex, nonce: Hex): Promise<Hex | null> {
    const logs = await this.#client.getLogs({
      address: token,
      event: EVENTS[1],
      args: { authorizer: getAddress(from), nonce },
      fromBlock: 0n,
      toBlock: 'latest',
      strict: true,
    });
    const found = logs.find((l) => !l.removed && l.transactionHash !== null);
    return found?.transactionHash ? (found.transactionHash.toLowerCase() as Hex) : null;
  }

  async latestTimeS(): Promise<bigint> {
    return (await this.#client.getBlock({ blockTag: 'latest' })).timestamp;
  }

  async finalized(): Promise<{ number: bigint; hash: Hex }> {
    const block = await this.#client.getBlock({ blockTag: 'finalized' });
    return { number: block.number, hash: block.hash.toLowerCase() as Hex };
  }

  async blockHashAt(number: bigint): Promise<Hex | null> {
    try {
      return (await this.#client.getBlock({ blockNumber: number })).hash.toLowerCase() as Hex;
    } catch (error) {
      if ((error as { name?: string }).name === 'BlockNotFoundError') return null;
      throw error;
    }
  }
}

/** The bytes-signature overload of transferWithAuthorization (as USDC v2.2 has it). */
function args(a: Eip3009Authorization, signature: Hex) {
  return [getAddress(a.from), getAddress(a.to), a.value, a.validAfter, a.validBefore, a.nonce, signature] as const;
}
