import { nativeToMicro, type PriceReading, stablecoinToMicro } from '../payments/amounts.js';

/** The longest an authorization in a plan stays valid: a lost plan should not stay spendable for long. */
export const SWEEP_VALID_S_MAX = 30 * 86_400;

// The sweep plan (issue 22): the transfers an offline signer makes to move deposit-address funds to the treasury.
// The server holds only the deposit xpub, so it can say what to move and from which derivation path, never sign.
// Pure: the caller reads the balances, picks the nonces and the deadline, and writes the plan out.
//
// - A token with EIP-3009 (USDC): the signer signs a TransferWithAuthorization for the deposit address (EIP-712, typed
//   data given whole), and any funded wallet (the server's gas wallet) sends `transferWithAuthorization`: the deposit
//   address never needs gas. The authorization can only pay the treasury, the amount, once (its nonce).
// - Any other token (USDT): a plain `transfer` signed and paid for by the deposit address, which needs gas first.
// - The native coin: a plain transfer of the balance less the transaction's own gas.

/** The BIP-44 path of deposit address `index` under the account-level xpub m/44'/60'/0'. */
export function depositDerivationPath(index: bigint): string {
  return `m/44'/60'/0'/0/${index}`;
}

export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ],
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

type Hex = `0x${string}`;

export interface SweepAsset {
  symbol: string;
  /** Lower-case ERC-20 address; null for the native coin. */
  token: Hex | null;
  decimals: number;
  /** The token's EIP-712 domain when it implements EIP-3009; null: a plain transfer. */
  authorization: { name: string; version: string } | null;
  /** `balances[i]`: deposit address i's balance, in the asset's smallest unit. */
  balances: readonly bigint[];
}

export interface SweepInput {
  network: string;
  chainId: number;
  blockNumber: bigint;
  treasury: Hex;
  addresses: readonly { index: bigint; address: Hex }[];
  stablecoins: readonly SweepAsset[];
  native: SweepAsset | null;
  nativePrice: PriceReading | null;
  /** Balances worth less than this (micro-USD) stay: moving them costs more gas than they are worth. */
  minMicro: bigint;
  /** Unix seconds after which an authorization is void. */
  validBeforeS: bigint;
  /** A fresh random 32-byte nonce per authorization (EIP-3009 nonces are not sequential). */
  nonce: () => Hex;
}

interface TransferBase {
  derivation_path: string;
  derivation_index: bigint;
  from: Hex;
  to: Hex;
  asset: string;
}

export interface AuthorizationTransfer extends TransferBase {
  method: 'transferWithAuthorization';
  token: Hex;
  amount_raw: bigint;
  amount_micro: bigint;
  /** Signed by the deposit address's key; sent by any funded wallet. */
  sender: 'gas_wallet';
  /** EIP-712 typed data, ready for eth_signTypedData_v4 / viem signTypedData. */
  typed_data: {
    domain: { name: string; version: string; chainId: number; verifyingContract: Hex };
    types: typeof TRANSFER_WITH_AUTHORIZATION_TYPES;
    primaryType: 'TransferWithAuthorization';
    message: { from: Hex; to: Hex; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex };
  };
}

export interface TokenTransfer extends TransferBase {
  method: 'transfer';
  token: Hex;
  amount_raw: bigint;
  amount_micro: bigint;
  /** Signed and sent by the deposit address, which must first be sent gas. */
  sender: 'deposit_address';
}

export interface NativeTransfer extends TransferBase {
  method: 'native_transfer';
  token: null;
  /** The balance: send it less this transaction's gas (gas limit 21000 x the fee you sign). */
  balance_raw: bigint;
  value_micro: bigint | null;
  sender: 'deposit_address';
}

export type SweepTransfer = AuthorizationTransfer | TokenTransfer | NativeTransfer;

export interface SweepPlan {
  network: string;
  chain_id: number;
  /** The finalized block the balances were read at. */
  block_number: bigint;
  treasury: Hex;
  valid_before: bigint;
  min_micro: bigint;
  transfers: SweepTransfer[];
  /** Per asset: how much the plan moves (raw) and how many transfers. */
  totals: Array<{ asset: string; token: Hex | null; amount_raw: bigint; transfers: number }>;
}

export function planSweep(input: SweepInput): SweepPlan {
  const transfers: SweepTransfer[] = [];
  const totals: SweepPlan['totals'] = [];
  const base = (i: number, asset: string): TransferBase => {
    const a = input.addresses[i] as { index: bigint; address: Hex };
    return { derivation_path: depositDerivationPath(a.index), derivation_index: a.index, from: a.address, to: input.treasury, asset };
  };
  for (const asset of input.stablecoins) {
    if (asset.token === null) continue;
    const token = asset.token;
    let amount = 0n;
    let count = 0;
    asset.balances.forEach((balance, i) => {
      const micro = stablecoinToMicro(balance, asset.decimals);
      if (balance === 0n || micro < input.minMicro) return;
      amount += balance;
      count += 1;
      const from = (input.addresses[i] as { address: Hex }).address;
      if (asset.authorization) {
        transfers.push({
          ...base(i, asset.symbol),
          method: 'transferWithAuthorization',
          token,
          amount_raw: balance,
          amount_micro: micro,
          sender: 'gas_wallet',
          typed_data: {
            domain: { ...asset.authorization, chainId: input.chainId, verifyingContract: token },
            types: TRANSFER_WITH_AUTHORIZATION_TYPES,
            primaryType: 'TransferWithAuthorization',
            message: { from, to: input.treasury, value: balance, validAfter: 0n, validBefore: input.validBeforeS, nonce: input.nonce() },
          },
        });
      } else {
        transfers.push({
          ...base(i, asset.symbol),
          method: 'transfer',
          token,
          amount_raw: balance,
          amount_micro: micro,
          sender: 'deposit_address',
        });
      }
    });
    totals.push({ asset: asset.symbol, token, amount_raw: amount, transfers: count });
  }
  if (input.native) {
    const native = input.native;
    let amount = 0n;
    let count = 0;
    native.balances.forEach((balance, i) => {
      if (balance === 0n) return;
      const price = input.nativePrice;
      const value = price && price.answer > 0n ? nativeToMicro(balance, native.decimals, price, 0) : null;
      // Without a price the balance is listed: the operator decides whether it is worth its gas.
      if (value !== null && value < input.minMicro) return;
      amount += balance;
      count += 1;
      transfers.push({
        ...base(i, native.symbol),
        method: 'native_transfer',
        token: null,
        balance_raw: balance,
        value_micro: value,
        sender: 'deposit_address',
      });
    });
    totals.push({ asset: native.symbol, token: null, amount_raw: amount, transfers: count });
  }
  return {
    network: input.network,
    chain_id: input.chainId,
    block_number: input.blockNumber,
    treasury: input.treasury,
    valid_before: input.validBeforeS,
    min_micro: input.minMicro,
    transfers,
    totals,
  };
}
