// Plain constants of the contract, in a module that loads nothing else: code that starts often (`ark-cp --help`, its
// configuration) imports them from here ('@ark/shared/limits') without loading the schema library. The schema
// modules re-export them, so '@ark/shared' still has them too.

/** The 8-4-4-4-12 hex form; also exported for code that checks ids outside a schema (headers, CLI flags). */
export const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * Largest MicroAmount: 10^15 micro-USDC, one billion USDC. One budget, extension, rate, charge or ledger posting is
 * at most this (the ledger's MAX_TRANSFER_MICRO), so sums and products of a few stay far inside int64.
 */
export const MICRO_AMOUNT_MAX = 1_000_000_000_000_000n;

/** Largest request body the relay carries in one relay_open frame (bytes). */
export const RELAY_BODY_MAX_BYTES = 160 * 1024;

/** An account password's length bounds (characters). */
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;
