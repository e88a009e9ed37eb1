import type { X402Chain } from '../../chain/x402-chain.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import type { Store } from '../../store/db.js';
import { type IntentPosition, intentsOfAccount } from '../../store/x402.js';
import { toTopUpRecord, type TopUpRecord } from './records.js';
import { type X402Deps, x402NetworkOf } from './x402-deps.js';
import { advanceOpenIntents } from './x402-settlement.js';
import { topUp } from './x402-top-up.js';

export type { IntentPosition };

/** Money in by x402 top-up: the route's use case, the settlement worker's step, and the top-ups in the balance. */
export function buildX402Services(input: {
  store: Store;
  clock: Clock;
  config: Config;
  chain: X402Chain | null;
  admit?: X402Deps['admit'];
  admissionOpen?: X402Deps['admissionOpen'];
  logger?: X402Deps['logger'];
}) {
  const deps: X402Deps = {
    store: input.store,
    clock: input.clock,
    x402: input.config.x402,
    payments: input.config.payments,
    chain: input.chain,
    network: x402NetworkOf(input.config.x402, input.config.payments),
    publicBaseUrl: input.config.publicBaseUrl,
    admit: input.admit,
    admissionOpen: input.admissionOpen,
    logger: input.logger,
  };
  return {
    enabled: () => deps.x402.enabled,
    topUp: (request: { accountId: string; amountMicro: bigint; payment: string | null }) => topUp(deps, request),
    /** Moves every open top-up along (the settlement worker's step): how many changed state. */
    advanceOpen: () => advanceOpenIntents(deps),
    /** An account's top-ups, newest first, after a cursor position; `fetch` of them (a page plus one). */
    history: async (accountId: string, after: IntentPosition | null, fetch: number): Promise<TopUpRecord[]> =>
      (await intentsOfAccount(input.store.db, accountId, after, Math.max(1, Math.min(fetch, 101)))).map(toTopUpRecord),
  };
}

export type X402Services = ReturnType<typeof buildX402Services>;

export const topUpPosition = (topUp: TopUpRecord): IntentPosition => ({ createdAt: topUp.createdAt, id: topUp.id });
