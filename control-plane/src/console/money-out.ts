import { usd, usdToMicro } from './format.js';
import { type ConsoleScope, FormError, type Signed, action, field, perform, signedIn, stepUpWithProof } from './session.js';

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** What the withdraw form needs: the account's registered addresses. */
export async function withdrawalAddresses(who: Signed): Promise<Array<{ id: string; address: string; label: string | null }>> {
  const answer = await who.api.call('GET', '/api/v1/withdrawal-addresses?limit=100');
  return answer.status === 200 ? answer.body.items : [];
}

/**
 * Money out from a form: the balance page withdraws the available balance, the earnings page pays out payable
 * earnings; any account may use both (the request names the balance, the API checks the session's scope). The proof
 * of the account's step-up method comes in the same form; a new address is registered first. Requests over the
 * review threshold wait for an operator.
 */
export function registerMoneyOutActions(c: ConsoleScope): void {
  for (const [path, back, balance] of [
    ['/earnings/payout', '/console/earnings', 'payable'],
    ['/balance/withdraw', '/console/balance', 'available'],
  ] as const) {
    action(c, path, async (request, reply) => {
      const who = await signedIn(c, request, reply);
      if (!who) return reply;
      return perform(c, reply, back, async () => {
        const body = request.body;
        const amount = usdToMicro(field(body, 'amount_usd', 'The amount'));
        if (amount === null || amount === 0n) throw new FormError('The amount is in USD with at most six decimals, like 25 or 12.5.');
        const chosen = (body?.withdrawal_address_id ?? '').trim();
        const typed = (body?.address ?? '').trim();
        if (chosen === '' && typed === '') throw new FormError('Choose one of your addresses or enter a new one.');
        if (chosen === '' && !EVM_ADDRESS.test(typed)) throw new FormError('The address is an EVM address: 0x and 40 hex digits.');
        await stepUpWithProof(who.api, who.account, body?.step_up);
        const addressId =
          chosen !== ''
            ? chosen
            : (await who.api.post<{ id: string }>('/api/v1/withdrawal-addresses', { address: typed, label: 'web console' })).id;
        const made = await who.api.post<{ kind: string; state: string; hold_reasons: string[] }>('/api/v1/withdrawals', {
          balance,
          amount_micro: amount.toString(),
          withdrawal_address_id: addressId,
        });
        const what = made.kind === 'payout' ? 'Payout' : 'Withdrawal';
        return made.hold_reasons.length > 0
          ? `${what} of ${usd(amount)} requested: it waits for an operator's review (${made.hold_reasons.join(', ')}).`
          : `${what} of ${usd(amount)} requested: ${made.state}; it is sent on chain next.`;
      });
    });
  }
}
