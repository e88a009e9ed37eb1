import type { Config } from '../config/index.js';
import type { ReliabilityServices } from '../services/reliability/index.js';
import type { Worker } from './runner.js';

// Machine reliability is scored here (every minute by default, ARK_RELIABILITY_INTERVAL_MS): the offers search, quotes
// and reservations read the stored hold, the host's machine view the stored score.

export function reliabilityWorker(reliability: ReliabilityServices, config: Pick<Config, 'reliability'>): Worker {
  return { name: 'machine-reliability', intervalMs: config.reliability.intervalMs, step: () => reliability.refresh() };
}
