import { balancesOf, type BillingDeps, creditAccount, verify } from './ledger.js';

/** Balances and operator credits; the billing route and `ark-cp ledger` share them. */
export function buildBillingServices(deps: BillingDeps) {
  return {
    credit: (input: { accountId: string; amountMicro: bigint; reason: string; operator: string }) => creditAccount(deps, input),
    balances: (accountId: string) => balancesOf(deps, accountId),
    verifyLedger: () => verify(deps),
  };
}

export type BillingServices = ReturnType<typeof buildBillingServices>;
