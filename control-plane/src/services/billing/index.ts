import { creditsOfAccount } from '../../store/job-credits.js';
import { balancesOf, type BillingDeps, creditAccount, verify } from './ledger.js';
import { toJobCreditRecord } from './records.js';

/** Balances and operator credits; the billing route and `ark-cp ledger` share them. */
export function buildBillingServices(deps: BillingDeps) {
  return {
    credit: (input: { accountId: string; amountMicro: bigint; reason: string; operator: string }) => creditAccount(deps, input),
    balances: (accountId: string) => balancesOf(deps, accountId),
    verifyLedger: () => verify(deps),
    /** Automatic credits the account received as a renter (issue 24), newest first. */
    jobCredits: async (accountId: string, limit: number) =>
      (await creditsOfAccount(deps.store.db, accountId, 'renter', limit)).map(toJobCreditRecord),
  };
}

export type BillingServices = ReturnType<typeof buildBillingServices>;
