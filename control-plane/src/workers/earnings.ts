import type { Config } from '../config/index.js';
import type { WithdrawalServices } from '../services/withdrawals/index.js';
import type { Worker } from './runner.js';

// Pending host earnings become payable here (issue 24 item 4), on the runner's clock: every tenth of
// ARK_EARNINGS_MATURITY_S (1 s to 60 s). Every replica runs it; each lot matures once (a compare-and-set on the lot in
// the transaction that moves its money, store/pending-earnings.ts). With maturity off nothing is ever pending.

export function earningsMaturityWorker(withdrawals: WithdrawalServices, config: Pick<Config, 'earnings'>): Worker {
  return {
    name: 'earnings-maturity',
    intervalMs: config.earnings.maturityIntervalMs,
    step: (_store, now) => withdrawals.matureEarnings(now),
  };
}
