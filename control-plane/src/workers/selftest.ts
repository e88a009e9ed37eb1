import type { Config } from '../config/index.js';
import type { HostingServices } from '../services/hosting/index.js';
import type { Worker } from './runner.js';

// Self-tests at enrollment and daily (issue 24 item 2): every ARK_SELFTEST_WORKER_INTERVAL_MS the worker asks each
// machine whose self-test is due (just enrolled, or a day after its last one, ARK_SELFTEST_INTERVAL_S) for a run_selftest. Each machine is claimed
// by compare-and-set on its due time, so of several replicas only one asks.

export function selftestWorker(hosting: HostingServices, config: Pick<Config, 'selftest'>): Worker {
  return { name: 'hardware-selftest', intervalMs: config.selftest.workerIntervalMs, step: () => hosting.queueDueSelftests() };
}
