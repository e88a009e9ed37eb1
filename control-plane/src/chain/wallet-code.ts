import { createPublicClient, http, type PublicClient } from 'viem';
import type { Hex } from './reader.js';

// Whether an address has contract code on the primary network: agent registration accepts only externally owned
// accounts (contract part 5, item 6). A narrow seam of its own, beside the deposit watcher's ChainReader.

export interface WalletCodeReader {
  /** True when the address holds code at the latest block (a contract, or an EOA delegated by EIP-7702). */
  hasCode(address: Hex): Promise<boolean>;
}

/** Over a viem public client on the primary network's RPC URL; the node must answer chain id `chainId`. */
export class ViemWalletCodeReader implements WalletCodeReader {
  readonly #client: PublicClient;
  readonly #chainId: number;
  #chainChecked = false;

  constructor(options: { rpcUrl: string; chainId: number; timeoutMs?: number }) {
    this.#client = createPublicClient({ transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: 1 }) });
    this.#chainId = options.chainId;
  }

  async hasCode(address: Hex): Promise<boolean> {
    if (!this.#chainChecked) {
      // A node on another chain would answer "no code" for every address: refuse to read it at all.
      const chainId = await this.#client.getChainId();
      if (chainId !== this.#chainId) throw new Error(`the RPC node is on chain ${chainId}, not ${this.#chainId}`);
      this.#chainChecked = true;
    }
    const code = await this.#client.getCode({ address });
    return code !== undefined && code !== '0x';
  }
}
