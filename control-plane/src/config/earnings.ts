import { EARNINGS_MATURITY_MAX_S, maturityIntervalMsOf } from '../domain/earnings/maturity.js';

// The host earnings part of the configuration (issue 24 item 4): how long a charge stays pending before it is
// payable. Read once by loadConfig; a bad value stops the server with exit code 2 naming the variable.

export interface EarningsConfig {
  /** ARK_EARNINGS_MATURITY_S: a host charge is pending this long, then payable; 0 turns maturity off (payable at once). */
  maturityS: number;
  /** How often the maturity worker runs: a tenth of the maturity, from 1 s to 60 s (domain/earnings/maturity.ts). */
  maturityIntervalMs: number;
}

/** loadConfig's integer reader: the variable's value, its default, and its bounds (a bad value stops the start). */
type IntOf = (name: string, fallback: number, min: number, max: number) => number;

export function earningsConfigFrom(int: IntOf): EarningsConfig {
  const maturityS = int('ARK_EARNINGS_MATURITY_S', 86_400, 0, EARNINGS_MATURITY_MAX_S);
  return { maturityS, maturityIntervalMs: maturityIntervalMsOf(maturityS) };
}
