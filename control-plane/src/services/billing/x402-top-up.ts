import { randomUUID } from 'node:crypto';
import type { X402PaymentRequired, X402TopUpResult } from '@ark/shared';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import { getAddress } from 'viem';
import type { X402Chain } from '../../chain/x402-chain.js';
import { DomainError, stateUnavailable } from '../../errors.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { roomUnderCap } from '../../domain/payments/deposits.js';
import {
  checkPaymentPayload,
  paymentRequirements,
  USDC_DOMAIN,
  X402_NETWORK,
  X402_VERSION,
  type X402Refusal,
} from '../../domain/payments/x402.js';
import { balanceOf } from '../../store/ledger.js';
import { transact } from '../../store/transaction.js';
import { insertIntent, intentByKey, type X402IntentRow } from '../../store/x402.js';
import type { X402Deps } from './x402-deps.js';
import { advanceIntent } from './x402-settlement.js';

/** How long one request waits for its settlement to be mined before answering 202 SETTLING (by the injected clock). */
export const MINE_WAIT_MS = 1_500;
/** How often it reads the receipt meanwhile. */
export const MINE_POLL_MS = 100;

export const TOP_UP_PATH = '/api/v1/billing/x402/top-up';

/** The x402 settlement response (PAYMENT-RESPONSE and X-PAYMENT-RESPONSE, base64 JSON). */
export interface SettleResponse {
  success: boolean;
  transaction: string;
  network: string;
  payer: string;
  errorReason?: string;
}

export type TopUpAnswer =
  | { status: 404 }
  | { status: 402; body: X402PaymentRequired }
  | { status: 202; body: { state: 'SETTLING'; tx_hash: string } }
  | { status: 200; body: X402TopUpResult; settlement: SettleResponse };

/**
 * `POST /api/v1/billing/x402/top-up?amount_micro=N` (contract parts 2, 3, 4, 7; DESIGN.md Payments). Without a
 * payment: 402 with the one requirement we offer. With one: a repeat of a known authorization answers its intent;
 * a new one is verified here (requirements, treasury, amount, time window, EIP-712 signature, nonce unused, payer
 * balance), persisted by (chain, token, payer, nonce) before anything is sent, simulated, signed, sent, and
 * answered 202 SETTLING or 200.
 */
export async function topUp(
  deps: X402Deps,
  input: { accountId: string; amountMicro: bigint; payment: string | null },
): Promise<TopUpAnswer> {
  const { x402 } = deps;
  if (!x402.enabled || !deps.network || !x402.treasury) return { status: 404 };
  const chain = deps.chain;
  if (!chain) throw stateUnavailable('The x402 settlement wallet is not available on this server; retry later.');
  if (input.amountMicro < x402.minMicro || input.amountMicro > x402.maxMicro)
    throw new DomainError('VALIDATION_FAILED', `querystring/amount_micro must be from ${x402.minMicro} to ${x402.maxMicro} micro-USDC`);
  const offered = paymentRequirements({
    amountMicro: input.amountMicro,
    usdc: deps.network.usdc,
    treasury: x402.treasury,
    maxTimeoutS: x402.maxTimeoutS,
    checksum: (a) => getAddress(a),
  });
  const required = (error: X402Refusal | string): TopUpAnswer => ({
    status: 402,
    body: {
      x402Version: X402_VERSION,
      error,
      resource: {
        url: `${deps.publicBaseUrl}${TOP_UP_PATH}?amount_micro=${input.amountMicro}`,
        description: `Top up the prepaid balance of the API key's account by ${input.amountMicro} micro-USDC`,
        mimeType: 'application/json',
      },
      accepts: [offered as X402PaymentRequired['accepts'][number]],
    },
  });
  if (input.payment === null) {
    await refuseWhilePaused(deps);
    await refuseOverCap(deps, input.accountId, input.amountMicro);
    return required('payment_required');
  }

  let decoded: unknown;
  try {
    decoded = decodePaymentSignatureHeader(input.payment);
  } catch {
    return required('invalid_payload');
  }
  const check = checkPaymentPayload(decoded, offered, BigInt(Math.floor(deps.clock.now().getTime() / 1000)));
  // A repeat of a known authorization answers the first result, even once it has expired.
  const key = keyOf(deps, decoded);
  const known = key && (await intentByKey(deps.store.db, key));
  if (known) {
    const same =
      known.account_id === input.accountId &&
      known.amount_micro === input.amountMicro &&
      (!check.ok || check.signature === known.signature);
    if (!same) return required('authorization_already_used');
    return answer(deps, chain, known, required);
  }
  if (!check.ok) return required(check.reason);
  const { authorization, signature } = check;
  await refuseWhilePaused(deps);

  await refuseOverCap(deps, input.accountId, input.amountMicro);
  const token = deps.network.usdc;
  const chainRead = async <T>(read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (error) {
      deps.logger?.warn({ err: (error as Error).message }, 'x402: the settlement network cannot be read');
      throw stateUnavailable('The settlement network cannot be reached right now; retry later.');
    }
  };
  const signer = await chain.recoverSigner(token, USDC_DOMAIN, authorization, signature);
  if (signer !== authorization.from) return required('invalid_signature');
  if (await chainRead(() => chain.authorizationUsed(token, authorization.from, authorization.nonce)))
    return required('authorization_already_used');
  if ((await chainRead(() => chain.balanceOf(token, authorization.from))) < authorization.value) return required('insufficient_funds');

  const id = randomUUID();
  const inserted = await transact(deps.store, async (trx) => {
    await deps.admit?.(trx, { accountId: input.accountId, reference: `x402:${id}` });
    return insertIntent(trx, {
      id,
      accountId: input.accountId,
      chainId: deps.network?.chainId ?? 8453,
      network: deps.network?.name ?? 'base',
      token,
      payer: authorization.from,
      nonce: authorization.nonce,
      payTo: authorization.to,
      amountMicro: authorization.value,
      validAfter: authorization.validAfter,
      validBefore: authorization.validBefore,
      signature,
      at: deps.clock.now(),
    });
  });
  const row = await intentByKey(deps.store.db, {
    chainId: deps.network.chainId,
    token,
    payer: authorization.from,
    nonce: authorization.nonce,
  });
  if (!row) throw new Error(`x402 intent ${id} vanished after it was stored`);
  // A concurrent first attempt of the same authorization won: answer as a repeat of it.
  if (!inserted && row.account_id !== input.accountId) return required('authorization_already_used');
  return answer(deps, chain, row, required, true);
}

/** Answers an intent after moving it as far as it goes now (a fresh one waits a moment for its transaction to mine). */
async function answer(
  deps: X402Deps,
  chain: X402Chain,
  row: X402IntentRow,
  required: (error: string) => TopUpAnswer,
  fresh = false,
): Promise<TopUpAnswer> {
  let current: X402IntentRow;
  try {
    current = await advanceIntent(deps, chain, row);
    // The wait is measured on the clock, not counted in polls: slow receipt reads do not stretch it.
    const deadline = deps.clock.monotonicMs() + MINE_WAIT_MS;
    while (fresh && current.state === 'SETTLING') {
      const left = deadline - deps.clock.monotonicMs();
      if (left <= 0) break;
      await deps.clock.sleep(Math.min(MINE_POLL_MS, left));
      current = await advanceIntent(deps, chain, current);
    }
  } catch (error) {
    deps.logger?.warn({ intent_id: row.id, err: (error as Error).message }, 'x402: settlement step failed');
    throw stateUnavailable('The settlement network cannot be reached right now; repeat the same request later.');
  }
  switch (current.state) {
    case 'REFUSED':
      return required(current.reason ?? 'settlement_refused');
    case 'VERIFIED':
    case 'SETTLING':
      // VERIFIED with no transaction yet: the settlement is on its way (another request or the worker holds it).
      return { status: 202, body: { state: 'SETTLING', tx_hash: current.tx_hash ?? '' } };
    default: {
      const body = toTopUpResult(current);
      return {
        status: 200,
        body,
        settlement: {
          success: current.state !== 'EXCEPTION',
          transaction: body.tx_hash,
          network: X402_NETWORK,
          payer: body.payer,
          ...(current.state === 'EXCEPTION' ? { errorReason: current.reason ?? 'exception' } : {}),
        },
      };
    }
  }
}

/** A stored intent as the top-up result (200). */
export function toTopUpResult(row: X402IntentRow): X402TopUpResult {
  return {
    intent_id: row.id,
    state: row.state as X402TopUpResult['state'],
    amount_micro: row.amount_micro.toString(),
    ...(row.credited_micro !== null ? { credited_micro: row.credited_micro.toString() } : {}),
    ...(row.reason !== null ? { reason: row.reason } : {}),
    payer: getAddress(row.payer),
    tx_hash: row.tx_hash ?? '',
    log_index: row.log_index === null ? -1 : Number(row.log_index),
    network: row.network,
  };
}

/** Over the balance cap a top-up is refused before anything is signed or sent (409, with the room left). */
/** 503 ADMISSIONS_PAUSED while paid admission is paused (a repeat of a known payment still answers its result). */
async function refuseWhilePaused(deps: X402Deps): Promise<void> {
  if (deps.admissionOpen && !(await deps.admissionOpen())) throw new DomainError('ADMISSIONS_PAUSED');
}

async function refuseOverCap(deps: X402Deps, accountId: string, amountMicro: bigint): Promise<void> {
  const room = roomUnderCap(await balanceOf(deps.store.db, ledgerAccounts.available(accountId)), deps.payments.balanceCapMicro);
  if (room !== null && amountMicro > room)
    throw new DomainError(
      'BALANCE_LIMIT_EXCEEDED',
      `A top-up of ${amountMicro} micro-USDC would take the available balance past its cap (ARK_BALANCE_CAP_MICRO); at most ${room} fits now.`,
    );
}

function keyOf(deps: X402Deps, decoded: unknown): { chainId: number; token: string; payer: string; nonce: string } | null {
  const authorization = (decoded as { payload?: { authorization?: { from?: unknown; nonce?: unknown } } } | null)?.payload?.authorization;
  const from = authorization?.from;
  const nonce = authorization?.nonce;
  if (!deps.network || typeof from !== 'string' || typeof nonce !== 'string') return null;
  if (!/^0x[0-9a-fA-F]{40}$/.test(from) || !/^0x[0-9a-fA-F]{64}$/.test(nonce)) return null;
  return { chainId: deps.network.chainId, token: deps.network.usdc, payer: from.toLowerCase(), nonce: nonce.toLowerCase() };
}
