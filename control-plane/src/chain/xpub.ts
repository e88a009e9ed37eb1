import { createHash } from 'node:crypto';

// The deposit xpub's check at configuration time, without viem or @scure/bip32 (issue 25, item 5): loading them costs
// `ark-cp --help` several times a bare node's start, and the configuration is loaded by every command. This reads the
// BIP32 serialization (base58check: version, depth, parent fingerprint, child number, chain code, key) and checks what
// the deriver would refuse: a bad encoding or checksum, a private key, a depth other than the account level, a public
// key that is not a point on secp256k1. The deriver (hd-addresses.ts) still parses it again where addresses are made.

export class DepositXpubError extends Error {
  override name = 'DepositXpubError';
}

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
/** BIP32 mainnet versions, as @scure/bip32 reads them by default. */
const XPUB_VERSION = 0x0488b21e;
const XPRV_VERSION = 0x0488ade4;
/** secp256k1's field prime. */
export const SECP256K1_P = 2n ** 256n - 2n ** 32n - 977n;
const P = SECP256K1_P;

function base58Decode(text: string): Buffer {
  let n = 0n;
  for (const char of text) {
    const digit = BASE58.indexOf(char);
    if (digit < 0) throw new DepositXpubError(`is not a valid extended public key (not base58: ${JSON.stringify(char)})`);
    n = n * 58n + BigInt(digit);
  }
  const hex = n === 0n ? '' : n.toString(16);
  const body = Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
  let zeros = 0;
  while (text[zeros] === '1') zeros += 1;
  return Buffer.concat([Buffer.alloc(zeros), body]);
}

export function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n;
  let b = base % modulus;
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % modulus;
    b = (b * b) % modulus;
    e >>= 1n;
  }
  return result;
}

/** Whether x (big-endian, 32 bytes) is the x of a point on secp256k1. */
function onCurve(x: Uint8Array): boolean {
  const value = BigInt(`0x${Buffer.from(x).toString('hex')}`);
  if (value >= P) return false;
  const ySquared = (value ** 3n + 7n) % P;
  const y = modPow(ySquared, (P + 1n) / 4n, P);
  return (y * y) % P === ySquared;
}

/** Refuses anything but a public, account-level (depth 3) extended key; the same refusals as DepositAddressDeriver. */
export function checkAccountXpub(xpub: string): void {
  const bytes = base58Decode(xpub.trim());
  if (bytes.length !== 82) throw new DepositXpubError(`is not a valid extended public key (${bytes.length} bytes, not 82)`);
  const payload = bytes.subarray(0, 78);
  const sum = createHash('sha256').update(createHash('sha256').update(payload).digest()).digest();
  if (!sum.subarray(0, 4).equals(bytes.subarray(78))) throw new DepositXpubError('is not a valid extended public key (bad checksum)');
  const version = payload.readUInt32BE(0);
  const key = payload.subarray(45, 78);
  if (version === XPRV_VERSION || key[0] === 0)
    throw new DepositXpubError('holds a private key: give the extended PUBLIC key (xpub), never the xprv');
  if (version !== XPUB_VERSION)
    throw new DepositXpubError(`is not a valid extended public key (version 0x${version.toString(16)} is not a mainnet xpub)`);
  if ((key[0] !== 2 && key[0] !== 3) || !onCurve(key.subarray(1)))
    throw new DepositXpubError('is not a valid extended public key (its key is not a secp256k1 point)');
  const depth = payload[4];
  if (depth !== 3) throw new DepositXpubError(`must be the account-level key m/44'/60'/0' (depth 3), got depth ${depth}`);
}
