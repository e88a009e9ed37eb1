import { writeFileSync } from 'node:fs';
import { SWEEP_VALID_S_MAX } from '../domain/reconciliation/sweep-plan.js';
import { reconcileReportView } from '../views/treasury.js';
import { type CliCommand, type CliContext, CliRefusal, printJson, text } from './context.js';

// Operator commands for the treasury (issue 22): reconcile the chain with the ledger now, and plan the sweep of the
// deposit addresses for an offline signer.

/** `treasury reconcile` exits with this when the chain holds less than the ledger owes (1 is a refusal, 2 a usage error). */
export const DEFICIT_EXIT_CODE = 3;

/** `treasury reconcile`: the report, and what became of the deficit alert (sent on every deficit the command finds). */
export async function treasuryReconcileCommand(ctx: Pick<CliContext, 'services'>) {
  return reconcileReportView(await ctx.services.treasury.reconcile('cli'));
}

/** `--min-micro`: a whole number of micro-USD, 1 USDC when absent. */
function minMicroOf(raw: string | undefined): bigint {
  if (raw === undefined) return 1_000_000n;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(raw)) throw new CliRefusal('--min-micro must be a whole number of micro-USD');
  return BigInt(raw);
}

/** `--valid-hours`: how long the authorizations stay valid, 1..720, 72 when absent. */
function validForSOf(raw: string | undefined): number {
  if (raw === undefined) return 72 * 3600;
  const hours = Number(raw);
  if (!/^[1-9][0-9]{0,2}$/.test(raw) || hours * 3600 > SWEEP_VALID_S_MAX) throw new CliRefusal('--valid-hours must be 1..720');
  return hours * 3600;
}

/** The plan's JSON: amounts as decimal strings (they exceed what a JSON number holds exactly). */
export function sweepPlanJson(plan: unknown): string {
  return `${JSON.stringify(plan, (_key, value) => (typeof value === 'bigint' ? value.toString() : value), 2)}\n`;
}

export const treasuryCommands: CliCommand[] = [
  {
    name: 'treasury reconcile',
    usage: 'treasury reconcile    (holdings at the finalized block against what the ledger owes; alerts and exits 3 on a deficit)',
    options: {},
    async run(_values, ctx) {
      const report = await treasuryReconcileCommand(ctx);
      printJson(ctx, report);
      if (report.status === 'deficit') {
        ctx.err(`ark-cp treasury reconcile: DEFICIT of ${report.deficit_micro} micro-USD (the chain holds less than the ledger owes)\n`);
        return DEFICIT_EXIT_CODE;
      }
      return 0;
    },
  },
  {
    name: 'treasury sweep-plan',
    usage:
      'treasury sweep-plan [--out FILE] [--min-micro N] [--valid-hours H]    (the transfers an offline signer makes to move deposit-address funds to the treasury)',
    options: { out: { type: 'string' }, 'min-micro': { type: 'string' }, 'valid-hours': { type: 'string' } },
    async run(values, ctx) {
      const plan = await ctx.services.treasury.sweepPlan({
        minMicro: minMicroOf(text(values, 'min-micro')),
        validForS: validForSOf(text(values, 'valid-hours')),
      });
      const out = text(values, 'out');
      if (out === undefined) {
        ctx.out(sweepPlanJson(plan));
        return 0;
      }
      writeFileSync(out, sweepPlanJson(plan), { mode: 0o600 });
      const count = plan.plans.reduce((sum, p) => sum + p.transfers.length, 0);
      ctx.out(`${count} transfers on ${plan.plans.length} networks written to ${out}\n`);
      return 0;
    },
  },
];
