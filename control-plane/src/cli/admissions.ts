import { admissionStatusView } from '../views/admissions.js';
import { ledgerSummaryView } from '../views/ledger.js';
import { type CliCommand, type CliContext, CliRefusal, printJson, required, text } from './context.js';

// Operator commands for admission (issue 12): pause and resume as a named admin (audited as that admin, as the
// HTTP route is), the state; and the platform's books.

const MAX_REASON_LENGTH = 2000;

/** The admin account an operator acts as, named by email; anyone else is refused. */
async function adminIdOf(ctx: Pick<CliContext, 'services'>, email: string): Promise<string> {
  const account = await ctx.services.accounts.accountWithEmail(email);
  if (!account) throw new CliRefusal(`no account with email "${email}"`);
  if (account.role !== 'admin') throw new CliRefusal(`"${email}" is not an admin account`);
  return account.id;
}

/** `admissions pause|resume`: the same use case as POST /api/v1/admin/admissions (a resume credits HELD deposits). */
export async function setAdmissionsCommand(ctx: Pick<CliContext, 'services'>, input: { enabled: boolean; email: string; reason: string }) {
  const reason = input.reason.trim();
  if (reason.length === 0 || reason.length > MAX_REASON_LENGTH)
    throw new CliRefusal(`--reason must be 1 to ${MAX_REASON_LENGTH} characters`);
  const adminAccountId = await adminIdOf(ctx, input.email);
  await ctx.services.admissions.set({ adminAccountId, enabled: input.enabled, reason });
  return admissionStatusView(await ctx.services.admissions.status());
}

const setCommand = (verb: 'pause' | 'resume'): CliCommand => ({
  name: `admissions ${verb}`,
  usage: `admissions ${verb} --email ADMIN_EMAIL --reason "..."`,
  options: { email: { type: 'string' }, reason: { type: 'string' } },
  async run(values, ctx) {
    const input = { enabled: verb === 'resume', email: required(values, 'email'), reason: required(values, 'reason') };
    printJson(ctx, await setAdmissionsCommand(ctx, input));
    return 0;
  },
});

export const admissionCommands: CliCommand[] = [
  setCommand('pause'),
  setCommand('resume'),
  {
    name: 'admissions status',
    usage: 'admissions status    (enabled, who changed it and why, deposits HELD)',
    options: {},
    async run(_values, ctx) {
      printJson(ctx, admissionStatusView(await ctx.services.admissions.status()));
      return 0;
    },
  },
  {
    name: 'ledger summary',
    usage: 'ledger summary [--from YYYY-MM-DD] [--to YYYY-MM-DD]    (fees, money in and out, held and payable; per UTC day)',
    options: { from: { type: 'string' }, to: { type: 'string' } },
    async run(values, ctx) {
      const query = { from: text(values, 'from'), to: text(values, 'to') };
      for (const [name, day] of Object.entries(query)) {
        if (day !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(day))
          throw new CliRefusal(`--${name} must be a day as YYYY-MM-DD, got "${day}"`);
      }
      printJson(ctx, ledgerSummaryView(await ctx.services.operations.ledgerSummary(query)));
      return 0;
    },
  },
];
