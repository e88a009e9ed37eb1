import { getAddress } from 'viem';
import type { X402Chain } from '../../chain/x402-chain.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { chainCreditRef } from '../../domain/payments/deposits.js';
import { type Eip3009Authorization, type Hex, nextSettlementStep } from '../../domain/payments/x402.js';
import { transfer } from '../../store/ledger.js';
import { transact } from '../../store/transaction.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import {
  highestGasNonce,
  intentById,
  lockIntent,
  moveIntent,
  openIntents,
  storeSignedSettlement,
  type X402IntentRow,
} from '../../store/x402.js';
import type { X402Deps } from './x402-deps.js';

// Moving a persisted top-up along: sign and send its settlement once, follow the transaction until it is mined,
// and credit it once after finality. The top-up route (to answer a repeat) and the settlement worker (to finish
// what a crash left) run the same steps; every move is a compare-and-set on the intent's state.

/** Open intents the worker moves per step. */
const WORKER_BATCH = 100;
/** Gas-wallet nonces tried when other replicas signed at the same ones. */
const NONCE_ATTEMPTS = 5;

/** Nonce allocation and signing, one at a time in this process (replicas are separated by the store's unique index). */
let signing: Promise<unknown> = Promise.resolve();

export function authorizationOf(row: X402IntentRow): Eip3009Authorization {
  return {
    from: row.payer as Hex,
    to: row.pay_to as Hex,
    value: row.amount_micro,
    validAfter: BigInt(row.valid_after),
    validBefore: BigInt(row.valid_before),
    nonce: row.nonce as Hex,
  };
}

/** Advances one intent as far as the chain allows now; answers it as stored afterwards. */
export async function advanceIntent(deps: X402Deps, chain: X402Chain, row: X402IntentRow): Promise<X402IntentRow> {
  if (row.state === 'VERIFIED') await settle(deps, chain, row);
  let current = (await intentById(deps.store.db, row.id)) ?? row;
  if (current.state === 'SETTLING') {
    await follow(deps, chain, current);
    current = (await intentById(deps.store.db, row.id)) ?? current;
  }
  if (current.state === 'PENDING_FINALITY') {
    await creditIfFinal(deps, chain, current);
    current = (await intentById(deps.store.db, row.id)) ?? current;
  }
  return current;
}

/**
 * VERIFIED: nothing was sent yet. Simulate; a refusal is final (REFUSED). Otherwise sign at the next gas-wallet
 * nonce, store the signed bytes (SETTLING), and only then broadcast them.
 */
async function settle(deps: X402Deps, chain: X402Chain, row: X402IntentRow): Promise<void> {
  const authorization = authorizationOf(row);
  const token = row.token as Hex;
  if (await chain.authorizationUsed(token, authorization.from, authorization.nonce)) {
    await usedElsewhere(deps, chain, row, 'VERIFIED');
    return;
  }
  if ((await chain.latestTimeS()) >= authorization.validBefore) {
    await moveIntent(deps.store.db, row.id, 'VERIFIED', 'EXCEPTION', { reason: 'authorization_expired_unmined' }, deps.clock.now());
    return;
  }
  const simulated = await chain.simulate(token, authorization, row.signature as Hex);
  if (!simulated.ok) {
    deps.logger?.warn({ intent_id: row.id, why: simulated.why }, 'x402 settlement refused in simulation');
    await moveIntent(deps.store.db, row.id, 'VERIFIED', 'REFUSED', { reason: 'settlement_refused' }, deps.clock.now());
    return;
  }
  const stored = await serialized(async () => {
    for (let attempt = 0; attempt < NONCE_ATTEMPTS; attempt++) {
      const highest = await highestGasNonce(deps.store.db, chain.gasWallet);
      const pending = await chain.pendingNonce();
      const nonce = highest !== null && highest + 1n > pending ? highest + 1n : pending;
      const signed = await chain.signSettlement(token, authorization, row.signature as Hex, nonce);
      const outcome = await storeSignedSettlement(deps.store.db, row.id, signed, deps.clock.now());
      if (outcome === 'stored') return signed;
      if (outcome === 'moved') return null;
    }
    throw new Error(`x402 intent ${row.id}: no free gas-wallet nonce after ${NONCE_ATTEMPTS} attempts`);
  });
  if (stored) await chain.broadcast(stored.rawTx);
}

/** SETTLING: mined (PENDING_FINALITY), re-sent (the same bytes), or an exception. */
async function follow(deps: X402Deps, chain: X402Chain, row: X402IntentRow): Promise<void> {
  const authorization = authorizationOf(row);
  const txHash = row.tx_hash as Hex;
  const [receipt, used, chainTimeS] = await Promise.all([
    chain.receipt(txHash, { token: row.token as Hex, from: authorization.from, to: authorization.to, value: authorization.value }),
    chain.authorizationUsed(row.token as Hex, authorization.from, authorization.nonce),
    chain.latestTimeS(),
  ]);
  const step = nextSettlementStep({ receipt, authorizationUsed: used, chainTimeS }, authorization.validBefore);
  const now = deps.clock.now();
  switch (step.action) {
    case 'mined':
      await moveIntent(
        deps.store.db,
        row.id,
        'SETTLING',
        'PENDING_FINALITY',
        { block_number: step.blockNumber, block_hash: step.blockHash, log_index: BigInt(step.logIndex) },
        now,
      );
      return;
    case 'resend':
      if (row.raw_tx) await chain.broadcast(row.raw_tx as Hex);
      return;
    case 'wait':
      return;
    case 'exception':
      if (step.reason === 'authorization_used_elsewhere') await usedElsewhere(deps, chain, row, 'SETTLING');
      else await moveIntent(deps.store.db, row.id, 'SETTLING', 'EXCEPTION', { reason: step.reason }, now);
  }
}

/**
 * The authorization was used by another transaction (the payer, or anyone holding it, sent it first) or cancelled.
 * Used: that transaction paid the treasury (`to` is signed), so it is the one credited. Cancelled: an exception.
 */
async function usedElsewhere(deps: X402Deps, chain: X402Chain, row: X402IntentRow, from: 'VERIFIED' | 'SETTLING'): Promise<void> {
  const authorization = authorizationOf(row);
  const now = deps.clock.now();
  const other = await chain.authorizationUsedBy(row.token as Hex, authorization.from, authorization.nonce);
  const receipt =
    other &&
    (await chain.receipt(other, { token: row.token as Hex, from: authorization.from, to: authorization.to, value: authorization.value }));
  if (other && receipt?.success && receipt.transferLogIndex !== null) {
    await moveIntent(
      deps.store.db,
      row.id,
      from,
      'PENDING_FINALITY',
      {
        reason: 'settled_by_another_transaction',
        tx_hash: other,
        block_number: receipt.blockNumber,
        block_hash: receipt.blockHash,
        log_index: BigInt(receipt.transferLogIndex),
      },
      now,
    );
    return;
  }
  await moveIntent(deps.store.db, row.id, from, 'EXCEPTION', { reason: 'authorization_cancelled' }, now);
}

/**
 * PENDING_FINALITY: once the block is at or below `finalized` and still canonical, credit the account in one
 * transaction with the deposits' exactly-once key (chain id, tx hash, log index). A block that is no longer
 * canonical sends the intent back to SETTLING (the receipt is read again: re-mined elsewhere, or re-sent).
 */
async function creditIfFinal(deps: X402Deps, chain: X402Chain, row: X402IntentRow): Promise<void> {
  const block = row.block_number;
  if (block === null || row.tx_hash === null || row.log_index === null) return;
  const finalized = await chain.finalized();
  if (block > finalized.number) return;
  const canonical = await chain.blockHashAt(block);
  const now = deps.clock.now();
  if (canonical !== row.block_hash) {
    deps.logger?.warn({ intent_id: row.id, block: block.toString() }, 'x402 settlement block is no longer canonical: following it again');
    await moveIntent(deps.store.db, row.id, 'PENDING_FINALITY', 'SETTLING', { block_number: null, block_hash: null, log_index: null }, now);
    return;
  }
  await transact(deps.store, async (trx) => {
    const locked = await lockIntent(trx, row.id);
    if (locked?.state !== 'PENDING_FINALITY') return;
    const posted = await transfer(trx, {
      from: ledgerAccounts.external(`chain:${locked.chain_id}`),
      to: ledgerAccounts.available(locked.account_id),
      amountMicro: locked.amount_micro,
      kind: 'deposit',
      reference: `x402:${locked.id}`,
      externalRef: chainCreditRef(Number(locked.chain_id), (locked.tx_hash as string).toLowerCase(), Number(locked.log_index)),
      at: now,
    });
    await moveIntent(
      trx,
      locked.id,
      'PENDING_FINALITY',
      'CONFIRMED',
      { credited_micro: locked.amount_micro, posting_id: posted.postingId, credited_at: now.toISOString() },
      now,
    );
    // Told in the credit's own transaction (issue 22): the event exists exactly when the credit does, and once, as the
    // intent leaves PENDING_FINALITY once under its lock. The fields are the top-up result's (toTopUpResult).
    await emitWebhookEvent(
      trx,
      locked.account_id,
      'topup.credited',
      {
        intent_id: locked.id,
        network: locked.network,
        payer: getAddress(locked.payer),
        tx_hash: locked.tx_hash,
        credited_micro: locked.amount_micro.toString(),
      },
      now,
    );
  });
}

/** The worker's step: every open intent, least recently touched first. Answers how many changed state. */
export async function advanceOpenIntents(deps: X402Deps): Promise<number> {
  const chain = deps.chain;
  if (!chain) return 0;
  let moved = 0;
  for (const row of await openIntents(deps.store.db, WORKER_BATCH)) {
    try {
      const after = await advanceIntent(deps, chain, row);
      if (after.state !== row.state) moved++;
    } catch (error) {
      deps.logger?.warn({ intent_id: row.id, err: (error as Error).message }, 'x402 settlement step failed; retrying later');
    }
  }
  return moved;
}

function serialized<T>(work: () => Promise<T>): Promise<T> {
  const run = signing.then(work, work);
  signing = run.catch(() => {});
  return run;
}
