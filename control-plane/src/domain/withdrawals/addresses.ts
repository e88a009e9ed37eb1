// What may be registered as a withdrawal address, beyond its shape (the schema checks 0x and 40 hex digits).

const ZERO_ADDRESS = /^0x0{40}$/;

/**
 * Why an address cannot receive withdrawals, or null when it can. The zero address has no key: a transfer to it is
 * burned (and USDC refuses it, so every payout to it would fail on chain).
 */
export function withdrawalAddressRefusal(address: string): string | null {
  if (ZERO_ADDRESS.test(address)) return 'body/address is the zero address, which nobody controls: give an address you hold the key to';
  return null;
}
