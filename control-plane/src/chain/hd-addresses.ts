import { HDKey } from '@scure/bip32';
import { bytesToHex, getAddress, keccak256 } from 'viem';
import { DepositXpubError, modPow, SECP256K1_P } from './xpub.js';

// Deposit addresses from the account-level extended public key (m/44'/60'/0'): child 0/i is an account's
// address. Only the public key is ever here; the private keys stay with whoever holds the seed.

/** The largest non-hardened BIP32 child index. */
export const MAX_DERIVATION_INDEX = 2n ** 31n - 1n;

export { DepositXpubError };

const P = SECP256K1_P;

/** secp256k1 point decompression: y^2 = x^3 + 7 over p (p = 3 mod 4, so y = (x^3 + 7)^((p + 1) / 4)). */
export function uncompressPublicKey(compressed: Uint8Array): Uint8Array {
  if (compressed.length !== 33 || (compressed[0] !== 2 && compressed[0] !== 3))
    throw new RangeError('not a compressed secp256k1 public key');
  const x = BigInt(bytesToHex(compressed.subarray(1)));
  const ySquared = (x ** 3n + 7n) % P;
  let y = modPow(ySquared, (P + 1n) / 4n, P);
  if ((y * y) % P !== ySquared) throw new RangeError('not a point on secp256k1');
  if ((y & 1n) !== BigInt(compressed[0] === 3 ? 1 : 0)) y = P - y;
  const out = new Uint8Array(65);
  out[0] = 4;
  out.set(hexTo32(x), 1);
  out.set(hexTo32(y), 33);
  return out;
}

function hexTo32(n: bigint): Uint8Array {
  const hex = n.toString(16).padStart(64, '0');
  return Uint8Array.from(hex.match(/../g) as string[], (b) => Number.parseInt(b, 16));
}

/** The Ethereum address of an uncompressed public key: the last 20 bytes of keccak256(x || y). */
export function publicKeyToAddress(uncompressed: Uint8Array): `0x${string}` {
  return getAddress(`0x${keccak256(uncompressed.subarray(1)).slice(-40)}`);
}

export class DepositAddressDeriver {
  readonly #external: HDKey;

  /** Refuses anything but a public, account-level (depth 3) extended key. */
  constructor(xpub: string) {
    let key: HDKey;
    try {
      key = HDKey.fromExtendedKey(xpub.trim());
    } catch (error) {
      throw new DepositXpubError(`is not a valid extended public key (${(error as Error).message})`);
    }
    if (key.privateKey) throw new DepositXpubError('holds a private key: give the extended PUBLIC key (xpub), never the xprv');
    if (key.depth !== 3) throw new DepositXpubError(`must be the account-level key m/44'/60'/0' (depth 3), got depth ${key.depth}`);
    this.#external = key.deriveChild(0);
  }

  /** Child 0/index's checksummed address. */
  addressAt(index: bigint): `0x${string}` {
    if (index < 0n || index > MAX_DERIVATION_INDEX) throw new RangeError(`derivation index ${index} is out of range`);
    const child = this.#external.deriveChild(Number(index));
    if (!child.publicKey) throw new Error('derived key has no public key');
    return publicKeyToAddress(uncompressPublicKey(child.publicKey));
  }
}
