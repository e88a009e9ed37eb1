import type { Config } from '../config/index.js';
import type { X402Services } from '../services/billing/x402-index.js';
import type { Worker } from './runner.js';

/**
 * The x402 settlement worker (only while ARK_X402_ENABLED): finishes what a request or a crash left open: sends a
 * persisted intent's stored transaction (never a second one), follows it until mined, credits it once after finality.
 */
export function x402Workers(x402: X402Services, config: Config): Worker[] {
  if (!config.x402.enabled) return [];
  return [{ name: 'x402-settlement', intervalMs: config.x402.pollIntervalMs, step: () => x402.advanceOpen() }];
}
