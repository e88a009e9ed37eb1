import { totalRateMicroPerHour } from '../domain/pricing.js';
import { ledgerAccountKey } from '../domain/ledger/accounts.js';
import { verifyLedger } from '../store/ledger.js';
import { depositStanding } from './adapter.js';
import type { ChainTransfer } from './chain.js';
import type { DefectKey } from './known-defects.js';
import { formatMicro, type SimModel, type SimUser } from './model.js';
import { SIM_LIMITS, type World } from './world.js';

// The invariants, stated as what a user is owed, checked against the store and the simulated chain. `checkStep`
// runs after every step; `checkEnd` once every job has stopped, finality has passed and every account has asked
// for everything it owns.

/** A stopped job's unspent budget must be back in available this soon after STOPPED (manual-clock time). */
export const HOLD_RELEASE_GRACE_MS = 5_000;

export class InvariantViolation extends Error {
  override name = 'InvariantViolation';
  constructor(
    readonly invariant: string,
    detail: string,
    /** The known defect this breaks, when it is one the simulator was built to find. */
    readonly defect: DefectKey | null = null,
  ) {
    super(`${invariant}: ${detail}${defect ? ` [${defect}]` : ''}`);
  }
}

const USDC_CHAIN_KEY = ledgerAccountKey('chain:8453', 'external');

/** What reached us on chain from a user, final and canonical: deposits to its address and its x402 payments. */
function finalInflows(world: World, user: SimUser): { deposits: ChainTransfer[]; x402Micro: bigint } {
  const deposits = user.depositAddress ? world.chain.deposits(true).filter((d) => d.to === user.depositAddress) : [];
  const x402Micro = world.chain
    .mined('x402', true)
    .filter((m) => m.tx.authorization.from === user.wallet.address)
    .reduce((sum, m) => sum + m.tx.authorization.value, 0n);
  return { deposits, x402Micro };
}

/** Credits from the chain into each account's available (deposits, top-ups). */
async function creditedByAccount(world: World): Promise<Map<string, bigint>> {
  const rows = await world.store.db
    .selectFrom('ledger_postings')
    .select(['to_key', (eb) => eb.fn.sum<bigint>('amount_micro').as('total')])
    .where('from_key', '=', USDC_CHAIN_KEY)
    .where('to_key', 'like', 'available:%')
    .groupBy('to_key')
    .execute();
  return new Map(rows.map((r) => [r.to_key.slice('available:'.length), BigInt(r.total)]));
}

/** After every step. Checks that cannot fail yet (no job, no deposit address, no request) are not run. */
export async function checkStep(model: SimModel, world: World): Promise<void> {
  await ledgerBalances(world);
  if (model.jobs.length > 0) await chargedAtMostWhatRan(model, world);
  if (model.users.some((u) => u.depositAddress !== null) || world.chain.mined('x402', false).length > 0)
    await depositsCreditedOnce(model, world);
  if (model.withdrawals.length > 0 || world.chain.mined('payout', false).length > 0) await payoutsPaidOnce(world, false);
  if (model.jobs.length > 0) await holdsBackAtStop(world, model.knownDefects.has('hold-until-closed'));
}

/** The ledger balances (sum zero) and no person's or job's balance is negative: one query after every step. */
async function ledgerBalances(world: World): Promise<void> {
  const row = await world.store.db
    .selectFrom('ledger_accounts')
    .select([
      (eb) => eb.fn.sum<bigint | null>('balance_micro').as('total'),
      (eb) =>
        eb.fn
          .count<bigint>('key')
          .filterWhere((w) => w.and([w('kind', 'not in', ['external', 'adjustment']), w('balance_micro', '<', 0n)]))
          .as('negative'),
    ])
    .executeTakeFirstOrThrow();
  if (BigInt(row.total ?? 0n) !== 0n || BigInt(row.negative) !== 0n)
    throw new InvariantViolation('the ledger balances', `sum ${row.total}, ${row.negative} negative balance(s)`);
}

/** The whole ledger recomputed from its postings: every cached balance equals them (at the end and after a crash). */
export async function ledgerVerifies(world: World): Promise<void> {
  const verification = await verifyLedger(world.store);
  if (!verification.ok) {
    const problems = verification.discrepancies.map(
      (d) => `${d.key} ${d.problem} (cached ${d.cachedMicro}, postings ${d.recomputedMicro})`,
    );
    throw new InvariantViolation('the ledger balances', `sum ${verification.sumMicro}; ${problems.join('; ') || 'no discrepancy listed'}`);
  }
}

/**
 * No receipt is charged twice: a job's charge is what its postings say, never more than its funded budget, and
 * never more than the quoted total rate times the runtime its agent reported (each period once).
 */
async function chargedAtMostWhatRan(model: SimModel, world: World): Promise<void> {
  const jobs = await world.store.db
    .selectFrom('jobs')
    .select([
      'id',
      'machine_id',
      'host_account_id',
      'machine_rate_micro_per_hour',
      'platform_fee_bps',
      'funded_budget_micro',
      'cumulative_charge_micro',
      'charged_host_micro',
      'charged_fee_micro',
    ])
    .execute();
  if (jobs.length === 0) return;
  const postings = await world.store.db
    .selectFrom('ledger_postings')
    .select(['reference', 'to_key', 'kind', 'amount_micro'])
    .where('kind', 'in', ['charge_host', 'charge_fee'])
    .execute();
  for (const job of jobs) {
    const mine = postings.filter((p) => p.reference === job.id);
    const posted = mine.reduce((sum, p) => sum + p.amount_micro, 0n);
    const owner = model.ownerOf(job.machine_id);
    const where = `job ${job.id.slice(0, 8)}`;
    if (posted !== job.cumulative_charge_micro || job.charged_host_micro + job.charged_fee_micro !== job.cumulative_charge_micro)
      throw new InvariantViolation('no receipt is charged twice', `${where}: postings ${posted}, job says ${job.cumulative_charge_micro}`);
    const hostKeys = owner ? [ledgerAccountKey(owner.accountId, 'payable'), ledgerAccountKey(owner.accountId, 'pending')] : [];
    if (owner && mine.some((p) => p.kind === 'charge_host' && !hostKeys.includes(p.to_key)))
      throw new InvariantViolation('a host is paid for its own machine only', `${where}: a host share went to another account`);
    if (job.cumulative_charge_micro > job.funded_budget_micro)
      throw new InvariantViolation('no receipt is charged twice', `${where}: charged ${job.cumulative_charge_micro} over its budget`);
    const machine = model.machines.find((m) => m.machineId === job.machine_id);
    const ranMs = machine?.agent.reported.get(job.id)?.runtimeMs ?? 0n;
    const rate = totalRateMicroPerHour(job.machine_rate_micro_per_hour, job.platform_fee_bps);
    const most = (rate * ranMs) / 3_600_000n;
    if (job.cumulative_charge_micro > most)
      throw new InvariantViolation(
        'no receipt is charged twice',
        `${where}: charged ${job.cumulative_charge_micro} for ${ranMs} ms reported at ${rate}/h (at most ${most})`,
      );
  }
}

/**
 * No deposit is credited twice, nor one that is not final and canonical: every CREDITED row is a final transfer
 * on the chain, and no account was credited more than reached us from it.
 */
async function depositsCreditedOnce(model: SimModel, world: World): Promise<void> {
  const credited = await world.store.db
    .selectFrom('chain_deposits')
    .select(['tx_hash', 'log_index', 'address', 'amount_micro', 'account_id', 'state'])
    .where('state', '=', 'CREDITED')
    .execute();
  const final = world.chain.deposits(true);
  for (const row of credited) {
    const t = final.find((d) => d.hash === row.tx_hash && BigInt(d.logIndex) === row.log_index);
    if (!t || t.to !== row.address || t.value !== row.amount_micro)
      throw new InvariantViolation(
        'no deposit is credited unless final',
        `deposit ${row.tx_hash.slice(0, 10)} is credited but not final on chain`,
      );
  }
  const byAccount = await creditedByAccount(world);
  for (const user of model.users) {
    const inflow = finalInflows(world, user);
    const owed = inflow.deposits.reduce((sum, d) => sum + d.value, 0n) + inflow.x402Micro;
    const got = byAccount.get(user.accountId) ?? 0n;
    if (got > owed)
      throw new InvariantViolation(
        'no deposit is credited twice',
        `user#${user.index} credited ${formatMicro(got)}, sent ${formatMicro(owed)}`,
      );
  }
}

/**
 * Each payout transfer on the chain belongs to exactly one request, to its address, for its amount; a CONFIRMED
 * request was paid by exactly one final transfer. At the end (`final`) every request has ended.
 */
async function payoutsPaidOnce(world: World, final: boolean): Promise<void> {
  const rows = await world.store.db.selectFrom('withdrawals').select(['id', 'state', 'address', 'amount_micro']).execute();
  if (rows.length === 0 && world.chain.mined('payout', false).length === 0) return;
  const txs = await world.store.db.selectFrom('withdrawal_transactions').select(['tx_hash', 'withdrawal_id']).execute();
  const ownerOfTx = new Map(txs.map((t) => [t.tx_hash.toLowerCase(), t.withdrawal_id]));
  const byId = new Map(rows.map((r) => [r.id, r]));
  const paidBy = new Map<string, number>();
  for (const m of world.chain.mined('payout', false)) {
    const id = ownerOfTx.get(m.tx.hash);
    const row = id ? byId.get(id) : undefined;
    if (!row) throw new InvariantViolation('each transfer is paid once', `payout ${m.tx.hash.slice(0, 10)} on chain belongs to no request`);
    if (row.address !== m.tx.to || row.amount_micro !== m.tx.amount)
      throw new InvariantViolation('each transfer is paid once', `payout for ${row.id.slice(0, 8)} paid ${m.tx.amount} to ${m.tx.to}`);
    paidBy.set(row.id, (paidBy.get(row.id) ?? 0) + 1);
  }
  const finalPaid = new Set(world.chain.mined('payout', true).map((m) => ownerOfTx.get(m.tx.hash)));
  for (const row of rows) {
    const count = paidBy.get(row.id) ?? 0;
    if (count > 1) throw new InvariantViolation('each transfer is paid once', `request ${row.id.slice(0, 8)} paid ${count} times`);
    if (row.state === 'CONFIRMED' && !finalPaid.has(row.id))
      throw new InvariantViolation('each transfer is paid once', `request ${row.id.slice(0, 8)} CONFIRMED without a final transfer`);
    if (row.state === 'FAILED' && count > 0)
      throw new InvariantViolation('each transfer is paid once', `request ${row.id.slice(0, 8)} FAILED but paid on chain`);
    if (final && row.state !== 'CONFIRMED' && row.state !== 'FAILED')
      throw new InvariantViolation('everything can be taken out', `request ${row.id.slice(0, 8)} still ${row.state} at the end`);
  }
}

/**
 * A stopped job's unspent budget is back in available within seconds of STOPPED (its final receipt was settled
 * before: the agent sends it first). CLEANING jobs passed STOPPED; CLOSED and FAILED ones released it whatever the
 * tree (`closedOnly`: defect 4 is not fixed, only those are checked).
 */
async function holdsBackAtStop(world: World, closedOnly: boolean): Promise<void> {
  const jobs = await world.store.db
    .selectFrom('jobs')
    .select(['id', 'account_id', 'state', 'state_changed_at'])
    .where('state', 'in', closedOnly ? ['CLOSED', 'FAILED'] : ['STOPPED', 'CLEANING', 'CLOSED', 'FAILED'])
    .execute();
  if (jobs.length === 0) return;
  const now = world.clock.now().getTime();
  const holds = await world.store.db
    .selectFrom('ledger_accounts')
    .select(['owner_id', 'balance_micro'])
    .where('kind', '=', 'hold')
    .where('balance_micro', '>', 0n)
    .execute();
  const held = new Map(holds.map((h) => [h.owner_id, h.balance_micro]));
  for (const job of jobs) {
    const left = held.get(job.id) ?? 0n;
    if (left === 0n) continue;
    if (job.state === 'STOPPED' && now - Date.parse(job.state_changed_at) < HOLD_RELEASE_GRACE_MS) continue;
    throw new InvariantViolation(
      "a stopped job's unspent budget is back in available within seconds of STOPPED",
      `job ${job.id.slice(0, 8)} is ${job.state} since ${job.state_changed_at} and still holds ${formatMicro(left)}`,
      job.state === 'FAILED' || job.state === 'CLOSED' ? null : 'hold-until-closed',
    );
  }
}

/** The deposit checks at the end: every final deposit is credited, or has a reason the owner accepts. */
async function depositsHaveAWayHome(model: SimModel, world: World, available: Map<string, bigint>): Promise<void> {
  const rows = await world.store.db
    .selectFrom('chain_deposits')
    .select(['id', 'tx_hash', 'log_index', 'account_id', 'amount_micro', 'state'])
    .execute();
  const refunds = await world.store.db
    .selectFrom('withdrawals')
    .select(['withdrawal_address_id', 'state', 'address', 'amount_micro'])
    .where('kind', '=', 'refund')
    .execute();
  const cap = SIM_LIMITS.balanceCapMicro;
  for (const user of model.users) {
    if (!user.depositAddress) continue;
    let belowMinimum = 0n;
    for (const t of world.chain.deposits(true)) {
      if (t.to !== user.depositAddress) continue;
      const row = rows.find((r) => r.tx_hash === t.hash && r.log_index === BigInt(t.logIndex));
      const what = `user#${user.index}'s deposit of ${formatMicro(t.value)}`;
      if (!row) throw new InvariantViolation('a final deposit is recorded', `${what} (final on chain) was never seen`);
      const standing = depositStanding(row);
      if (standing === 'seen') throw new InvariantViolation('a final deposit is decided', `${what} is still SEEN after finality`);
      if (standing === 'below_minimum') belowMinimum += t.value;
      if (standing === 'refunding' || standing === 'refunded') {
        // A refund goes back to the sender, once, and ends: the payer's request is the deposit's way home.
        const paid = refunds.filter((r) => r.withdrawal_address_id === row.id && r.state === 'CONFIRMED');
        if (standing !== 'refunded' || paid.length !== 1 || paid[0]?.address !== t.from || paid[0]?.amount_micro !== t.value)
          throw new InvariantViolation(
            'a refunded deposit goes back to its sender once',
            `${what} is ${row.state} with ${paid.length} paid refund(s) (${paid.map((r) => `${r.amount_micro} to ${r.address}`).join(', ')})`,
          );
        continue;
      }
      if (standing !== 'held') continue;
      const room = cap - (available.get(user.accountId) ?? 0n);
      if (t.value <= room && !model.knownDefects.has('deposit-blocked-by-held'))
        throw new InvariantViolation(
          'a deposit that fits the cap is credited after finality',
          `${what} fits (room ${formatMicro(room)}) but is HELD`,
          'deposit-blocked-by-held',
        );
      if (t.value > room && !model.knownDefects.has('held-deposit-operator-path'))
        throw new InvariantViolation(
          'a deposit over the cap is credited by an operator or refunded',
          `${what} is still HELD after the operator's turn`,
          'held-deposit-operator-path',
        );
    }
    if (belowMinimum >= SIM_LIMITS.minDepositMicro && !model.knownDefects.has('deposit-below-minimum-sum'))
      throw new InvariantViolation(
        'deposits below the minimum are credited once their sum reaches it',
        `user#${user.index} sent ${formatMicro(belowMinimum)} in deposits below the minimum, none credited`,
        'deposit-below-minimum-sum',
      );
  }
}

export interface Owned {
  available: bigint;
  payable: bigint;
  held: bigint;
  locked: bigint;
}

/** What an account owns in the ledger: available, payable, held by its jobs, locked in its requests. */
export async function ownedByAccount(world: World, accountId: string): Promise<Owned> {
  return (await ownedByAccounts(world)).get(accountId) ?? { available: 0n, payable: 0n, held: 0n, locked: 0n };
}

/** The same for every account at once. */
export async function ownedByAccounts(world: World): Promise<Map<string, Owned>> {
  const rows = await world.store.db
    .selectFrom('ledger_accounts')
    .select(['account_id', 'kind', (eb) => eb.fn.sum<bigint>('balance_micro').as('total')])
    .where('account_id', 'is not', null)
    .groupBy(['account_id', 'kind'])
    .execute();
  const out = new Map<string, Owned>();
  for (const r of rows) {
    const id = r.account_id as string;
    const owned = out.get(id) ?? { available: 0n, payable: 0n, held: 0n, locked: 0n };
    const total = BigInt(r.total);
    if (r.kind === 'available') owned.available += total;
    else if (r.kind === 'payable') owned.payable += total;
    else if (r.kind === 'hold') owned.held += total;
    else if (r.kind === 'lock') owned.locked += total;
    out.set(id, owned);
  }
  return out;
}

/**
 * The liveness invariant, after every job stopped, finality passed and every account asked for everything: each
 * owns nothing more in the ledger (everything it owned was paid to it on chain, once), every final deposit is
 * credited or has an operator's way home, and the books of each account add up.
 */
export async function checkEnd(model: SimModel, world: World): Promise<void> {
  await checkStep(model, world);
  await ledgerVerifies(world);
  const open = await world.store.db.selectFrom('jobs').select(['id', 'state']).where('state', 'not in', ['CLOSED', 'FAILED']).execute();
  if (open.length > 0)
    throw new InvariantViolation('every job ends', `${open.map((j) => `${j.id.slice(0, 8)} ${j.state}`).join(', ')} after the drain`);
  await payoutsPaidOnce(world, true);
  const available = new Map<string, bigint>();
  const credited = await creditedByAccount(world);
  const everyone = await ownedByAccounts(world);
  for (const user of model.users) {
    const owned = everyone.get(user.accountId) ?? { available: 0n, payable: 0n, held: 0n, locked: 0n };
    available.set(user.accountId, owned.available);
    const who = `user#${user.index} (signed up as ${user.kind})`;
    if (owned.held > 0n || owned.locked > 0n)
      throw new InvariantViolation(
        'everything can be taken out',
        `${who} still has ${formatMicro(owned.held)} held, ${formatMicro(owned.locked)} locked`,
      );
    // Defect 1: the route picks the kind by role, so a host-role account's available and anyone else's payable stay.
    const roleBound = model.knownDefects.has('payout-by-role');
    if (owned.available > 0n && !(roleBound && user.role === 'host'))
      throw new InvariantViolation(
        'an account that deposited can withdraw it, whatever role it signed up with',
        `${who} still owns ${formatMicro(owned.available)} available after asking for it`,
        user.role === 'host' ? 'payout-by-role' : null,
      );
    if (owned.payable > 0n && !(roleBound && user.role !== 'host'))
      throw new InvariantViolation(
        'an account that earned payable can be paid it, whatever role it signed up with',
        `${who} still owns ${formatMicro(owned.payable)} payable after asking for it`,
        user.role !== 'host' ? 'payout-by-role' : null,
      );
    await booksAddUp(world, user, owned, credited.get(user.accountId) ?? 0n);
  }
  await depositsHaveAWayHome(model, world, available);
  await x402Credited(model, world);
}

/** credited + earned = spent + paid out + still owned, per account, from the jobs and the chain. */
async function booksAddUp(world: World, user: SimUser, owned: { available: bigint; payable: bigint }, credited: bigint): Promise<void> {
  const jobs = await world.store.db
    .selectFrom('jobs')
    .select(['account_id', 'host_account_id', 'cumulative_charge_micro', 'charged_host_micro'])
    .where((eb) => eb.or([eb('account_id', '=', user.accountId), eb('host_account_id', '=', user.accountId)]))
    .execute();
  const spent = jobs.filter((j) => j.account_id === user.accountId).reduce((s, j) => s + j.cumulative_charge_micro, 0n);
  const earned = jobs.filter((j) => j.host_account_id === user.accountId).reduce((s, j) => s + j.charged_host_micro, 0n);
  // Paid out: its own CONFIRMED withdrawals and payouts (payoutsPaidOnce matched each to one final transfer).
  const paidOut = (
    await world.store.db
      .selectFrom('withdrawals')
      .select('amount_micro')
      .where('account_id', '=', user.accountId)
      .where('state', '=', 'CONFIRMED')
      .where('kind', 'in', ['withdrawal', 'payout'])
      .execute()
  ).reduce((s, r) => s + r.amount_micro, 0n);
  if (credited + earned !== spent + paidOut + owned.available + owned.payable)
    throw new InvariantViolation(
      "each account's books add up",
      `user#${user.index}: credited ${credited} + earned ${earned} != spent ${spent} + paid out ${paidOut} + owned ${owned.available + owned.payable}`,
    );
}

/** Every final x402 settlement on chain was credited once, to the account that paid. */
async function x402Credited(model: SimModel, world: World): Promise<void> {
  const deposits = await world.store.db
    .selectFrom('ledger_postings')
    .select(['to_key', 'amount_micro', 'reference'])
    .where('from_key', '=', USDC_CHAIN_KEY)
    .where('reference', 'like', 'x402:%')
    .execute();
  for (const user of model.users) {
    const paid = finalInflows(world, user).x402Micro;
    const got = deposits.filter((p) => p.to_key === ledgerAccountKey(user.accountId, 'available')).reduce((s, p) => s + p.amount_micro, 0n);
    if (paid !== got)
      throw new InvariantViolation(
        'a final top-up is credited once',
        `user#${user.index} paid ${formatMicro(paid)} by x402, credited ${formatMicro(got)}`,
      );
  }
}
