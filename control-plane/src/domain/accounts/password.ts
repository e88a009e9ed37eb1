import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '@ark/shared/limits';

// scrypt with N=2^15, r=8, p=1 needs 128*N*r = 32 MiB; Node's default maxmem is exactly 32 MiB, so allow more.
const COST = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
const MAX_MEMORY_BYTES = 256 * 1024 * 1024;
/** Stored hashes may carry other parameters (older or newer costs); these bound what we agree to run. */
const MAX_N = 2 ** 20;

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }, keyBytes: number): Promise<Buffer> {
  const options: ScryptOptions = { ...cost, maxmem: MAX_MEMORY_BYTES };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, keyBytes, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/** Self-describing: `scrypt$N=32768,r=8,p=1$<salt base64url>$<key base64url>`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, COST, KEY_BYTES);
  return `scrypt$N=${COST.N},r=${COST.r},p=${COST.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

const FORMAT = /^scrypt\$N=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

/** Constant-time comparison; a malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const match = FORMAT.exec(stored);
  if (!match) return false;
  const [, n, r, p, salt, key] = match;
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  if (cost.N > MAX_N || cost.r > 32 || cost.p > 16) return false;
  const expected = Buffer.from(key ?? '', 'base64url');
  if (expected.length < 16) return false;
  const actual = await derive(password, Buffer.from(salt ?? '', 'base64url'), cost, expected.length);
  return timingSafeEqual(actual, expected);
}

/** Verifying against this when the email is unknown costs the same time as a real check, so timing does not enumerate accounts. */
let dummyHash: Promise<string> | null = null;
export async function burnPasswordCheck(password: string): Promise<false> {
  dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(password, await dummyHash);
  return false;
}

/** Null when acceptable, else a sentence saying why not (the same rule the HTTP schema enforces). */
export function passwordPolicyViolation(password: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH) return `The password must be at least ${PASSWORD_MIN_LENGTH} characters long.`;
  if (password.length > PASSWORD_MAX_LENGTH) return `The password must be at most ${PASSWORD_MAX_LENGTH} characters long.`;
  return null;
}

/** 24 random bytes as base64url: 32 characters, 192 bits. */
export function generatePassword(): string {
  return randomBytes(24).toString('base64url');
}
