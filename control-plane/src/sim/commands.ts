import fc from 'fast-check';
import type { AsyncCommand } from 'fast-check';
import { iso } from '../clock.js';
import { tick } from './drain.js';
import { checkStep, ledgerVerifies, ownedByAccounts } from './invariants.js';
import { attempt, formatMicro, type SignUpKind, type SimModel } from './model.js';
import type { World } from './world.js';

// The simulation's commands: every kind of user doing what the public use cases let them, the chain and the agents
// misbehaving, the operator, and the process crashing. Each names the users, machines and jobs it acts on by
// number, taken among those it makes sense for when it runs (a funded renter, a listed machine, a job not ended)
// and modulo how many there are, so a shrunk sequence stays meaningful with commands removed. After every command
// the step invariants are checked (invariants.ts).

const USDC = 1_000_000n;

export class SimCommand implements AsyncCommand<SimModel, World> {
  constructor(
    readonly label: string,
    readonly needs: (model: SimModel) => boolean,
    readonly act: (model: SimModel, world: World) => Promise<string>,
  ) {}

  check(model: Readonly<SimModel>): boolean {
    return this.needs(model as SimModel);
  }

  async run(model: SimModel, world: World): Promise<void> {
    // A millisecond between commands: rows written by two commands never share a timestamp (orderings stay stable).
    await world.advance(1);
    const outcome = await attempt(() => this.act(model, world));
    model.trace.push(`${this.label} -> ${outcome}`);
    await checkStep(model, world);
  }

  toString(): string {
    return this.label;
  }
}

const hasUsers = (m: SimModel) => m.users.length > 0;
const hasMachines = (m: SimModel) => m.machines.length > 0;
const hasJobs = (m: SimModel) => m.jobs.length > 0;
const any = () => true;

const pick = <T>(list: readonly T[], i: number): T | undefined => list[i % Math.max(1, list.length)];

async function fundedUsers(m: SimModel, w: World, atLeast: bigint) {
  const owned = await ownedByAccounts(w);
  return m.users.filter((user) => (owned.get(user.accountId)?.available ?? 0n) >= atLeast);
}

async function rentableMachines(m: SimModel, w: World) {
  const listed = await w.store.db.selectFrom('offers').select('machine_id').where('listed', '=', 1n).execute();
  const ids = new Set(listed.map((o) => o.machine_id));
  return m.machines.filter((machine) => machine.agent.present && ids.has(machine.machineId));
}

/** Jobs not ended yet, in the model's order. */
async function liveJobs(m: SimModel, w: World) {
  const ended = await w.store.db
    .selectFrom('jobs')
    .select('id')
    .where('state', 'in', ['STOPPED', 'CLEANING', 'CLOSED', 'FAILED'])
    .execute();
  const done = new Set(ended.map((j) => j.id));
  return m.jobs.filter((j) => !done.has(j.jobId));
}

/** The commands, one factory each (the arbitraries below draw their arguments; scenarios.ts writes them by hand). */
export const command = {
  signUp: (kind: SignUpKind) => new SimCommand(`signUp(${kind})`, any, async (m, w) => `user#${(await m.signUp(w, kind)).index}`),

  /** Any account turns hosting on (an enrollment token) and enrolls a machine that goes live. */
  hostingOn: (u: number) =>
    new SimCommand(`hostingOn(user#${u})`, hasUsers, async (m, w) => {
      const user = m.user(u);
      const machine = await m.enrollMachine(w, user);
      return `user#${user.index} (${user.kind}) hosts machine#${machine.index}`;
    }),

  /** The user's wallet sends USDC to its deposit address (mined with the next block). */
  deposit: (u: number, amount: bigint) =>
    new SimCommand(`deposit(user#${u}, ${formatMicro(amount)})`, hasUsers, async (m, w) => {
      const user = m.user(u);
      const to = await m.depositAddress(w, user);
      const hash = w.chain.sendDeposit(user.wallet.address, to, amount);
      return `user#${user.index} sent ${formatMicro(amount)} (tx ${hash.slice(0, 10)})`;
    }),

  topUp: (u: number, usdc: number) =>
    new SimCommand(`topUp(user#${u}, ${usdc} USDC)`, hasUsers, async (m, w) => {
      const user = m.user(u);
      return `user#${user.index}: ${await m.topUp(w, user, BigInt(usdc) * USDC)}`;
    }),

  reorg: (depth: number, reinclude: boolean) =>
    new SimCommand(`reorg(depth ${depth}, ${reinclude ? 're-include' : 'drop deposits'})`, any, async (_m, w) => {
      const done = w.chain.reorg(depth, reinclude);
      return `${done} block(s) replaced; head ${w.chain.head}`;
    }),

  /** Time passes; longer spans see more blocks (three make what was mined before them final). */
  tick: (ms: number) => new SimCommand(`tick(${ms / 1000} s)`, any, (m, w) => tick(m, w, ms, Math.min(3, Math.ceil(ms / 20_000)))),

  congest: (blocks: number) =>
    new SimCommand(`congest(${blocks} blocks)`, any, async (_m, w) => {
      w.chain.congest(blocks);
      return 'payouts wait';
    }),

  /** The machine's owner commits a new offer version at another rate. */
  offer: (i: number, rate: bigint) =>
    new SimCommand(`offer(machine#${i}, ${formatMicro(rate)}/h)`, hasMachines, async (m, w) => {
      const machine = m.machine(i);
      const owner = m.users[machine.ownerIndex];
      if (!owner) return 'no owner';
      const current = await w.store.db
        .selectFrom('offers')
        .select('current_version')
        .where('machine_id', '=', machine.machineId)
        .executeTakeFirst();
      const now = w.clock.now();
      const committed = await w.services.offers.commit({
        principal: owner.principal,
        machineId: machine.machineId,
        request: {
          rate_micro_per_hour: rate.toString(),
          included_quotas: { included_disk_gib: 100, included_egress_gib: 100 },
          available_from: iso(now),
          available_until: iso(new Date(now.getTime() + 30 * 86_400_000)),
          expected_version: (current?.current_version ?? 0n).toString(),
        },
      });
      return `machine#${machine.index} offer v${committed.version}`;
    }),

  /** A quote and a reservation; renters with money rent, among listed machines whose agent is there. */
  reserve: (u: number, i: number, durationS: number, budgetUsdc: bigint | null) =>
    new SimCommand(
      `reserve(user#${u}, machine#${i}, ${durationS} s${budgetUsdc === null ? '' : `, budget ${budgetUsdc} USDC`})`,
      (m) => hasUsers(m) && hasMachines(m),
      async (m, w) => {
        const renter = pick(await fundedUsers(m, w, 2n * USDC), u) ?? m.user(u);
        const machine = pick(await rentableMachines(m, w), i) ?? m.machine(i);
        const job = await m.reserve(w, renter, machine, durationS, budgetUsdc === null ? null : budgetUsdc * USDC);
        return `user#${renter.index} rents machine#${machine.index}: job#${job.index}`;
      },
    ),

  extend: (j: number, addUsdc: bigint) =>
    new SimCommand(`extend(job#${j}, +${addUsdc} USDC)`, hasJobs, async (m, w) => {
      const job = pick(await liveJobs(m, w), j) ?? m.job(j);
      const renter = m.users[job.renterIndex];
      if (!renter) return 'no renter';
      const row = await w.store.db
        .selectFrom('jobs')
        .select(['job_version', 'budget_version', 'duration_limit_s'])
        .where('id', '=', job.jobId)
        .executeTakeFirstOrThrow();
      const extended = await w.services.jobs.extendBudget(job.jobId, renter.accountId, {
        additional_budget_micro: (addUsdc * USDC).toString(),
        new_duration_limit_s: Number(row.duration_limit_s),
        expected_job_version: row.job_version.toString(),
        expected_budget_version: row.budget_version.toString(),
      });
      return `job#${job.index} funded ${formatMicro(extended.fundedBudgetMicro)}`;
    }),

  stop: (j: number) =>
    new SimCommand(`stop(job#${j})`, hasJobs, async (m, w) => {
      const job = pick(await liveJobs(m, w), j) ?? m.job(j);
      const renter = m.users[job.renterIndex];
      if (!renter) return 'no renter';
      return `job#${job.index} ${await w.services.jobs.stop(job.jobId, { accountId: renter.accountId, admin: false }, 'sim stop')}`;
    }),

  /** The agent loses its connection (its containers keep running). */
  vanish: (i: number) =>
    new SimCommand(`vanish(machine#${i})`, hasMachines, async (m) => {
      const machine = pick(
        m.machines.filter((x) => x.agent.present),
        i,
      );
      if (!machine) return 'every agent is away';
      machine.agent.present = false;
      return `machine#${machine.index}'s agent is gone`;
    }),

  comeBack: (i: number) =>
    new SimCommand(`return(machine#${i})`, hasMachines, async (m, w) => {
      const machine = pick(
        m.machines.filter((x) => !x.agent.present),
        i,
      );
      if (!machine) return 'every agent is here';
      machine.agent.present = true;
      await machine.agent.turn(w);
      await w.flushHeartbeats();
      return `machine#${machine.index}'s agent is back`;
    }),

  resend: (i: number, freshId: boolean) =>
    new SimCommand(`resend(machine#${i}${freshId ? ', new message id' : ''})`, hasMachines, async (m, w) => {
      const machine = m.machine(i);
      return (await machine.agent.resend(w, freshId)) ? `machine#${machine.index} resent its last message` : 'nothing to resend';
    }),

  /** An account asks for part or all of one of its balances (among accounts that hold some). */
  withdraw: (u: number, balance: 'available' | 'payable', divisor: bigint) =>
    new SimCommand(`withdraw(user#${u}, ${balance}${divisor === 1n ? '' : ` / ${divisor}`})`, hasUsers, async (m, w) => {
      const everyone = await ownedByAccounts(w);
      const holders = m.users.filter((x) => (everyone.get(x.accountId)?.[balance] ?? 0n) > 0n);
      const user = pick(holders, u) ?? m.user(u);
      const amount = (everyone.get(user.accountId)?.[balance] ?? 0n) / divisor;
      if (amount <= 0n) return `user#${user.index} has no ${balance}`;
      return `user#${user.index}: ${await m.withdraw(w, user, balance, amount)} ${formatMicro(amount)}`;
    }),

  /** The operator reviews one request held for review. */
  review: (k: number, approve: boolean) =>
    new SimCommand(`review(held request #${k}, ${approve ? 'approve' : 'reject'})`, any, async (m, w) => {
      const held = await w.services.withdrawals.listByState('UNSIGNED', null, 100);
      const row = pick(held, k);
      if (!row) return 'nothing held';
      const result = await w.services.withdrawals.review({
        id: row.id,
        adminAccountId: m.adminAccountId,
        decision: approve ? 'approve' : 'reject',
        reason: 'sim review',
      });
      return `${result.kind} ${row.id.slice(0, 8)} ${result.state}`;
    }),

  admissions: (enabled: boolean) =>
    new SimCommand(enabled ? 'resumeAdmissions' : 'pauseAdmissions', any, async (m, w) => {
      await w.services.admissions.set({ adminAccountId: m.adminAccountId, enabled, reason: 'sim' });
      m.paused = !enabled;
      return enabled ? 'admissions open' : 'admissions paused';
    }),

  /** The process dies and restarts on the same database; the ledger must verify from its postings. */
  crash: () =>
    new SimCommand('crash', any, async (_m, w) => {
      await w.crash();
      await ledgerVerifies(w);
      return `process restarted (start ${w.starts})`;
    }),
};

const who = fc.nat({ max: 15 });

/** Deposits: ordinary, below the minimum (1 USDC), and around or over the balance cap (100 USDC). */
const depositAmount = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 40 }).map((n) => BigInt(n) * USDC) },
  { weight: 2, arbitrary: fc.integer({ min: 3, max: 9 }).map((n) => BigInt(n) * 100_000n) },
  { weight: 2, arbitrary: fc.integer({ min: 95, max: 160 }).map((n) => BigInt(n) * USDC) },
);

const arbitraries = {
  tick: fc.constantFrom(1_000, 5_000, 15_000, 30_000, 60_000, 300_000).map(command.tick),
  signUp: fc.constantFrom<SignUpKind>('renter', 'renter', 'host', 'host', 'agent').map(command.signUp),
  hostingOn: who.map(command.hostingOn),
  deposit: fc.tuple(who, depositAmount).map(([u, amount]) => command.deposit(u, amount)),
  topUp: fc.tuple(who, fc.integer({ min: 1, max: 60 })).map(([u, n]) => command.topUp(u, n)),
  reorg: fc.tuple(fc.integer({ min: 1, max: 2 }), fc.boolean()).map(([depth, reinclude]) => command.reorg(depth, reinclude)),
  congest: fc.integer({ min: 1, max: 12 }).map(command.congest),
  offer: fc.tuple(who, fc.constantFrom(500_000n, 2_000_000n, 7_200_000n)).map(([i, rate]) => command.offer(i, rate)),
  reserve: fc
    .tuple(who, who, fc.constantFrom(600, 3600, 7200), fc.option(fc.constantFrom(1n, 3n, 10n), { nil: null }))
    .map(([u, i, durationS, budget]) => command.reserve(u, i, durationS, budget)),
  extend: fc.tuple(who, fc.constantFrom(1n, 5n)).map(([j, add]) => command.extend(j, add)),
  stop: who.map(command.stop),
  vanish: who.map(command.vanish),
  comeBack: who.map(command.comeBack),
  resend: fc.tuple(who, fc.boolean()).map(([i, freshId]) => command.resend(i, freshId)),
  withdraw: fc
    .tuple(who, fc.constantFrom<'available' | 'payable'>('available', 'payable'), fc.constantFrom(4n, 2n, 1n))
    .map(([u, balance, divisor]) => command.withdraw(u, balance, divisor)),
  review: fc.tuple(who, fc.boolean()).map(([k, approve]) => command.review(k, approve)),
  // The operator pauses admissions now and then, and resumes them more often than not.
  admissions: fc.constantFrom(false, true, true).map(command.admissions),
  crash: fc.constant(null).map(() => command.crash()),
};

const times = <T>(n: number, item: T): T[] => Array.from({ length: n }, () => item);

/** Every command, weighted by repetition: time passing most (everything else needs it), then money in and renting. */
export const COMMANDS = [
  ...times(6, arbitraries.tick),
  ...times(3, arbitraries.signUp),
  ...times(2, arbitraries.hostingOn),
  ...times(3, arbitraries.deposit),
  ...times(2, arbitraries.topUp),
  ...times(4, arbitraries.reserve),
  ...times(2, arbitraries.stop),
  arbitraries.extend,
  arbitraries.offer,
  arbitraries.reorg,
  arbitraries.congest,
  ...times(2, arbitraries.vanish),
  ...times(2, arbitraries.comeBack),
  arbitraries.resend,
  ...times(2, arbitraries.withdraw),
  arbitraries.review,
  arbitraries.admissions,
  arbitraries.crash,
];

/**
 * The marketplace a sequence starts from (generated and shrunk like the commands): hosts with a machine each,
 * renter-role accounts that host too, renters funded by a deposit, wallet agents funded by an x402 top-up. Built
 * through the same use cases as the commands, then a minute passes so the money is final and credited.
 */
export interface Population {
  hosts: number;
  renterHosts: number;
  renters: number;
  agents: number;
  fundUsdc: number;
}

export const NOBODY: Population = { hosts: 0, renterHosts: 0, renters: 0, agents: 0, fundUsdc: 20 };

export const POPULATION: fc.Arbitrary<Population> = fc.record({
  hosts: fc.integer({ min: 0, max: 2 }),
  renterHosts: fc.integer({ min: 0, max: 1 }),
  renters: fc.integer({ min: 0, max: 3 }),
  agents: fc.integer({ min: 0, max: 1 }),
  fundUsdc: fc.constantFrom(20, 5, 60),
});

export async function populate(model: SimModel, world: World, population: Population): Promise<void> {
  const step = async (label: string, act: () => Promise<string>) => {
    await world.advance(1);
    model.trace.push(`setup: ${label} -> ${await attempt(act)}`);
    await checkStep(model, world);
  };
  const fund = BigInt(population.fundUsdc) * USDC;
  for (let i = 0; i < population.hosts; i++)
    await step('host signs up with a machine', async () => {
      const host = await model.signUp(world, 'host');
      return `user#${host.index} hosts machine#${(await model.enrollMachine(world, host)).index}`;
    });
  for (let i = 0; i < population.renterHosts; i++)
    await step(`renter signs up, deposits ${population.fundUsdc} USDC and hosts a machine`, async () => {
      const user = await model.signUp(world, 'renter');
      world.chain.sendDeposit(user.wallet.address, await model.depositAddress(world, user), fund);
      return `user#${user.index} hosts machine#${(await model.enrollMachine(world, user)).index}`;
    });
  for (let i = 0; i < population.renters; i++)
    await step(`renter signs up and deposits ${population.fundUsdc} USDC`, async () => {
      const user = await model.signUp(world, 'renter');
      world.chain.sendDeposit(user.wallet.address, await model.depositAddress(world, user), fund);
      return `user#${user.index}`;
    });
  for (let i = 0; i < population.agents; i++)
    await step(`wallet agent registers and tops up ${population.fundUsdc} USDC`, async () => {
      const agent = await model.signUp(world, 'agent');
      return `user#${agent.index}: ${await model.topUp(world, agent, fund)}`;
    });
  if (model.users.length > 0) await step('a minute passes', () => tick(model, world, 60_000, 3));
}
