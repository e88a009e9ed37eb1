import { randomInt } from 'node:crypto';

// User codes per RFC 8628 section 6.1: consonants only (no vowels, so no words), no look-alikes, 8 characters
// (20^8, about 34 bits; with a 15-minute life and 10 misses an hour per account and address, guessing is hopeless).

export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;
const VALID = new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`);

/** A fresh code in its canonical (stored) form, 8 characters without the dash. */
export function generateUserCode(random: (max: number) => number = randomInt): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[random(USER_CODE_ALPHABET.length)];
  return code;
}

/** How a code is shown to people: XXXX-XXXX. */
export function formatUserCode(canonical: string): string {
  return `${canonical.slice(0, 4)}-${canonical.slice(4)}`;
}

/** What a person typed, in canonical form: upper case, dashes and spaces dropped. Null when it cannot be a code. */
export function normalizeUserCode(input: string): string | null {
  const canonical = input.toUpperCase().replace(/[\s-]/g, '');
  return VALID.test(canonical) ? canonical : null;
}
