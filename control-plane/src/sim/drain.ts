import { operatorResolvesHeldDeposit } from './adapter.js';
import { FINALITY_DEPTH } from './chain.js';
import { checkEnd, checkStep, ownedByAccount, ownedByAccounts } from './invariants.js';
import { attempt, type SimModel } from './model.js';
import { SIM_LIMITS, type World } from './world.js';

// Time passing, and the end of every sequence: everyone stops renting, finality passes, and every account asks for
// everything it owns, through the same use cases a user has. Then the liveness invariant is checked.

/** Most rounds of "take everything out" (a round can credit held deposits, which the next round takes out). */
const TAKE_OUT_ROUNDS = 6;

/**
 * Simulated time passes: `blocks` blocks are mined (one unless told), every present agent takes its turn, every
 * worker runs one step.
 */
export async function tick(model: SimModel, world: World, ms: number, blocks = 1): Promise<string> {
  await world.advance(ms);
  for (let i = 0; i < blocks; i++) world.chain.mine();
  for (const machine of model.machines) await machine.agent.turn(world);
  await world.flushHeartbeats();
  await world.workers();
  return `block ${world.chain.head}, final ${world.chain.finalized}`;
}

const ENDED = ['CLOSED', 'FAILED'];
const STOPPED_OR_ENDED = ['STOPPED', 'CLEANING', ...ENDED];

async function jobsNotIn(world: World, states: readonly string[]): Promise<number> {
  const rows = await world.store.db.selectFrom('jobs').select('state').execute();
  return rows.filter((r) => !states.includes(r.state)).length;
}

async function openRequests(world: World): Promise<number> {
  const rows = await world.store.db.selectFrom('withdrawals').select('state').where('state', 'not in', ['CONFIRMED', 'FAILED']).execute();
  return rows.length;
}

/** The operator approves every request held for review (the console's queue). */
async function approveHeld(model: SimModel, world: World): Promise<number> {
  const held = await world.services.withdrawals.listByState('UNSIGNED', null, 200);
  for (const row of held) {
    await attempt(async () => {
      await world.services.withdrawals.review({
        id: row.id,
        adminAccountId: model.adminAccountId,
        decision: 'approve',
        reason: 'sim drain',
      });
      return 'approved';
    });
  }
  return held.length;
}

export async function drain(model: SimModel, world: World): Promise<void> {
  const note = async (label: string, outcome: string | Promise<string>): Promise<string> => {
    const said = await outcome;
    model.trace.push(`drain: ${label} -> ${said}`);
    await checkStep(model, world);
    return said;
  };
  const passTime = async (ms: number, until: () => Promise<boolean>, most: number, label: string, blocks = 1) => {
    for (let i = 0; i < most && !(await until()); i++) await note(`${label}: tick ${ms / 1000} s`, tick(model, world, ms, blocks));
  };
  // Enough blocks in one tick for what was mined before it to be final.
  const finalityBlocks = FINALITY_DEPTH + 1;

  // Everyone is back, the market is open.
  for (const machine of model.machines) machine.agent.present = true;
  if (model.paused) {
    await note(
      'resume admissions',
      attempt(async () => {
        await world.services.admissions.set({ adminAccountId: model.adminAccountId, enabled: true, reason: 'sim drain' });
        model.paused = false;
        return 'resumed';
      }),
    );
  }

  // Every renter stops every job; the agents stop them and send their final receipts.
  for (const job of model.jobs) {
    const renter = model.users[job.renterIndex];
    if (!renter) continue;
    await note(
      `stop job#${job.index}`,
      attempt(async () => `${await world.services.jobs.stop(job.jobId, { accountId: renter.accountId, admin: false }, 'sim drain')}`),
    );
  }
  await passTime(5_000, async () => (await jobsNotIn(world, STOPPED_OR_ENDED)) === 0, 60, 'jobs stop');
  // Seconds after STOPPED, the unspent budgets are back (checked after this step).
  if (model.jobs.length > 0) await note('seconds after STOPPED: tick 5 s', tick(model, world, 5_000));

  // The retrieval window passes (the agents heartbeat at the new time before the sweeps run); the agents clean up.
  if ((await jobsNotIn(world, ENDED)) > 0) {
    const windowS = world.config.retrievalWindowS + 60;
    await note(`retrieval window: tick ${windowS} s`, tick(model, world, windowS * 1000));
    await passTime(5_000, async () => (await jobsNotIn(world, ENDED)) === 0, 30, 'jobs close');
  }

  // Finality passes for everything sent: blocks pile up, then the workers catch up (after a crash, once the dead
  // process's leases expired).
  await note('finality: tick 30 s', tick(model, world, 30_000, finalityBlocks));
  await passTime(30_000, () => caughtUp(world), 10, 'finality');

  // Every account takes out everything it owns; the operator approves what waits for review and acts on held
  // deposits that will never fit.
  for (let round = 0; round < TAKE_OUT_ROUNDS; round++) {
    let asked = 0;
    const everyone = await ownedByAccounts(world);
    for (const user of model.users) {
      const owned = everyone.get(user.accountId);
      if (!owned || (owned.available === 0n && owned.payable === 0n)) continue;
      if (owned.available > 0n) {
        const said = await note(
          `user#${user.index} takes out available`,
          attempt(() => model.withdraw(world, user, 'available', owned.available)),
        );
        if (!said.startsWith('refused')) asked++;
      }
      const after = await ownedByAccount(world, user.accountId);
      if (after.payable > 0n) {
        const said = await note(
          `user#${user.index} takes out payable`,
          attempt(() => model.withdraw(world, user, 'payable', after.payable)),
        );
        if (!said.startsWith('refused')) asked++;
      }
    }
    await passTime(
      30_000,
      async () => {
        await approveHeld(model, world);
        return (await openRequests(world)) === 0;
      },
      20,
      'payouts',
      finalityBlocks,
    );
    asked += await operatorTurn(model, world);
    // The watcher's next step credits held deposits that fit now that available is empty.
    if (await heldDeposits(world)) await note('held deposits: tick 5 s', tick(model, world, 5_000));
    if (asked === 0) break;
  }
  await checkEnd(model, world);
}

/** The deposit watcher scanned to the finalized block and decided everything final; no top-up is still open. */
async function caughtUp(world: World): Promise<boolean> {
  const db = world.store.db;
  const state = await db.selectFrom('chain_watch_state').select('cursor_block').executeTakeFirst();
  if (!state || state.cursor_block < world.chain.finalized) return false;
  const seen = await db
    .selectFrom('chain_deposits')
    .select('id')
    .where('state', '=', 'SEEN')
    .where('block_number', '<=', world.chain.finalized)
    .execute();
  const open = await db
    .selectFrom('x402_intents')
    .select('id')
    .where('state', 'in', ['VERIFIED', 'SETTLING', 'PENDING_FINALITY'])
    .execute();
  return seen.length === 0 && open.length === 0;
}

async function heldDeposits(world: World): Promise<boolean> {
  return (await world.store.db.selectFrom('chain_deposits').select('id').where('state', '=', 'HELD').limit(1).execute()).length > 0;
}

/** The operator's way home for HELD deposits that do not fit even in an empty balance (adapter.ts). */
async function operatorTurn(model: SimModel, world: World): Promise<number> {
  const held = await world.store.db
    .selectFrom('chain_deposits')
    .select(['id', 'amount_micro', 'account_id'])
    .where('state', '=', 'HELD')
    .orderBy('seen_at')
    .orderBy('id')
    .execute();
  let acted = 0;
  if (held.length === 0) return 0;
  const everyone = await ownedByAccounts(world);
  for (const row of held) {
    const owned = everyone.get(row.account_id) ?? { available: 0n };
    if ((row.amount_micro ?? 0n) + owned.available <= SIM_LIMITS.balanceCapMicro) continue;
    // Refund some, credit others (by the amount's whole USDC, so a shrunk sequence keeps its choice).
    const action = ((row.amount_micro ?? 0n) / 1_000_000n) % 2n === 1n ? 'refund' : 'credit';
    const said = await attempt(async () =>
      (await operatorResolvesHeldDeposit(world, { depositId: row.id, adminAccountId: model.adminAccountId, action }))
        ? 'done'
        : 'no such action on this tree',
    );
    if (said === 'done') acted++;
    model.trace.push(`drain: operator ${action}s held deposit ${row.id.slice(0, 8)} -> ${said}`);
    await checkStep(model, world);
  }
  return acted;
}
