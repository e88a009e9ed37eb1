import {
  type JobCreditLine,
  type AdminDeposit,
  type BillingBalance,
  type Deposit,
  type DepositAddress,
  type DepositAsset,
  type DepositNetwork,
  type DepositResolution,
  type TopUp,
  toDecimal,
} from '@ark/shared';
import { getAddress } from 'viem';
import type { DepositAddressRecord } from '../services/billing/deposit-address.js';
import type { DepositResolutionResult } from '../services/billing/deposit-resolution.js';
import type { NetworkStatus } from '../services/billing/deposits-index.js';
import type { DepositRecord, JobCreditRecord, OperatorDeposit, TopUpRecord } from '../services/billing/records.js';

// Money in as the wire shows it (shared/src/http/deposits.ts, billing.ts): deposits, x402 top-ups, the balance, the
// deposit address; the routes, `ark-cp` and the console (through the routes) alike.

/** A deposit as the renter sees it. */
export function depositView(d: DepositRecord): Deposit {
  return {
    deposit_id: d.id,
    state: d.state,
    network: d.network,
    chain_id: Number(d.chainId),
    asset: d.asset,
    token_address: d.tokenAddress,
    tx_hash: d.txHash,
    log_index: Number(d.logIndex),
    block_number: d.blockNumber.toString(),
    amount: d.amountRaw,
    decimals: Number(d.decimals),
    amount_micro: d.amountMicro === null ? null : d.amountMicro.toString(),
    credited_micro: d.state === 'CREDITED' && d.amountMicro !== null ? d.amountMicro.toString() : null,
    reason: d.reason,
    seen_at: d.seenAt,
    credited_at: d.creditedAt,
  };
}

/** A deposit as an operator sees it (the admin route, `ark-cp deposits held`, the console). */
export function adminDepositView(o: OperatorDeposit): AdminDeposit {
  const d = o.deposit;
  return {
    ...depositView(d),
    account_id: d.accountId,
    from_address: d.fromAddress,
    needs_operator: o.needsOperator,
    refund_refusal: o.refundRefusal,
    refund:
      o.refund === null
        ? null
        : { id: o.refund.id, state: o.refund.state as NonNullable<AdminDeposit['refund']>['state'], tx_hash: o.refund.txHash },
    resolved_by: d.resolvedBy,
    resolution_reason: d.resolutionReason,
    resolved_at: d.resolvedAt,
  };
}

/** An operator's credit or refund of a HELD deposit. */
export function depositResolutionView(r: DepositResolutionResult): DepositResolution {
  return {
    deposit_id: r.depositId,
    action: r.action,
    state: r.state,
    amount_micro: r.amountMicro.toString(),
    refund_id: r.refund?.id ?? null,
    refund_to: r.refund?.to ?? null,
    already: r.already,
  };
}

/** A top-up as the balance's history shows it. */
export function topUpView(t: TopUpRecord): TopUp {
  return {
    intent_id: t.id,
    state: t.state as TopUp['state'],
    network: t.network,
    payer: getAddress(t.payer),
    amount_micro: t.amountMicro.toString(),
    credited_micro: t.creditedMicro === null ? null : t.creditedMicro.toString(),
    reason: t.reason,
    tx_hash: t.txHash,
    log_index: t.logIndex === null ? null : Number(t.logIndex),
    created_at: t.createdAt,
    credited_at: t.creditedAt,
  };
}

/** The caller's balance around one page of its deposits and one of its top-ups (paginated by the route). */
export function billingBalanceView(
  balances: { availableMicro: bigint; heldMicro: bigint },
  deposits: BillingBalance['deposits'],
  topUps: BillingBalance['top_ups'],
  credits: JobCreditRecord[] = [],
): BillingBalance {
  return {
    available_micro: toDecimal(balances.availableMicro),
    held_micro: toDecimal(balances.heldMicro),
    currency: 'USDC' as const,
    deposits,
    top_ups: topUps,
    credits: credits.map(jobCreditView),
  };
}

/** An automatic credit (issue 24): a line in the renter's balance and in the host's earnings. */
export function jobCreditView(c: JobCreditRecord): JobCreditLine {
  return {
    job_id: c.jobId,
    reason: c.reason,
    credit_micro: toDecimal(c.creditMicro),
    from_host_micro: toDecimal(c.fromHostMicro),
    healthy_at: c.healthyAt,
    at: c.createdAt,
  };
}

function assetsOf(n: DepositAddressRecord['networks'][number]['network']): DepositAsset[] {
  const tokens: DepositAsset[] = n.assets.map((a) => ({
    network: n.name,
    chain_id: n.chainId,
    symbol: a.symbol,
    kind: 'token',
    address: a.address,
    decimals: a.decimals,
  }));
  if (!n.native) return tokens;
  return [
    ...tokens,
    {
      network: n.name,
      chain_id: n.chainId,
      symbol: n.native.symbol,
      kind: 'native',
      address: null,
      decimals: n.native.decimals,
      spread_bps: n.native.spreadBps,
    },
  ];
}

/** Contract part 7, DepositAddress: where to send money, what is taken on which network, the bounds, recent deposits. */
export function depositAddressView(a: DepositAddressRecord): DepositAddress {
  const networks: DepositNetwork[] = a.networks.map(({ network: n, finalizedBlock }) => ({
    name: n.name,
    chain_id: n.chainId,
    assets: assetsOf(n),
    native: n.native ? { symbol: n.native.symbol, decimals: n.native.decimals, spread_bps: n.native.spreadBps } : null,
    finalized_block_number: finalizedBlock === null ? null : finalizedBlock.toString(),
  }));
  return {
    chain_id: 8453,
    network: 'base',
    address: a.address,
    networks,
    assets: networks.flatMap((n) => n.assets),
    min_deposit_micro: a.minDepositMicro.toString(),
    max_deposit_micro: a.roomMicro === null ? null : a.roomMicro.toString(),
    finalized_block_number: a.finalizedBlock === null ? null : a.finalizedBlock.toString(),
    deposits: a.recent.map(depositView),
  };
}

/** A watched network as `ark-cp chain status` prints it. */
export function networkStatusView(n: NetworkStatus) {
  return {
    network: n.network,
    chain_id: n.chainId,
    head_block: n.headBlock?.toString() ?? null,
    finalized_block: n.finalizedBlock?.toString() ?? null,
    cursor_block: n.cursorBlock?.toString() ?? null,
    lag_blocks: n.lagBlocks?.toString() ?? null,
    finality_stalled: n.finalityStalled,
    lease_owner: n.leaseOwner,
    lease_until: n.leaseUntil,
    deposits: Object.fromEntries(Object.entries(n.deposits).map(([k, v]) => [k, v.toString()])),
  };
}
