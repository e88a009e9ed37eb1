import type { AccountRole } from '@ark/shared';
import { MICRO_AMOUNT_MAX } from '@ark/shared/limits';
import type { SpendCapStanding } from '../domain/jobs/spend-cap.js';
import { normalizeEmail, parseScopeList } from '../domain/accounts/account.js';
import { generatePassword, passwordPolicyViolation } from '../domain/accounts/password.js';
import { operatorAccountView, operatorKeyView, operatorSpendCapView } from '../views/accounts.js';
import { type CliCommand, type CliContext, CliRefusal, printJson, required, text } from './context.js';

// Operator commands. Admin accounts exist only through here: sign-up never grants admin.

const ROLES: readonly AccountRole[] = ['renter', 'host', 'admin'];
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export interface CreateAccountInput {
  email: string;
  role: string;
  password?: string;
  verified?: boolean;
  name?: string;
}

/** `accounts create`: the account as JSON, with `initial_password` when one was generated. */
export async function createAccountCommand(ctx: Pick<CliContext, 'services'>, input: CreateAccountInput) {
  const email = normalizeEmail(input.email);
  if (!EMAIL.test(email) || email.length > 254) throw new CliRefusal(`"${input.email}" is not an email address`);
  if (!(ROLES as readonly string[]).includes(input.role))
    throw new CliRefusal(`--role must be one of ${ROLES.join(', ')}, got "${input.role}"`);
  const generated = input.password === undefined ? generatePassword() : null;
  const password = input.password ?? (generated as string);
  const violation = passwordPolicyViolation(password);
  if (violation) throw new CliRefusal(violation);
  const account = await ctx.services.accounts.createAccountByOperator({
    email,
    password,
    name: input.name ?? null,
    role: input.role as AccountRole,
    verified: input.verified === true,
  });
  return operatorAccountView(account, generated);
}

export interface CreateKeyInput {
  email: string;
  scopes: string;
  label: string;
  expiresAt?: string;
}

/** `keys create`: the secret is printed once; only its hash is stored. */
export async function createKeyCommand(ctx: Pick<CliContext, 'services' | 'clock'>, input: CreateKeyInput) {
  const scopes = parseScopeList(input.scopes);
  if (!scopes) throw new CliRefusal(`--scopes must be a comma list of renter and host, got "${input.scopes}"`);
  if (input.label.length < 1 || input.label.length > 200) throw new CliRefusal('--label must be 1 to 200 characters');
  let expiresAt: Date | null = null;
  if (input.expiresAt !== undefined) {
    expiresAt = new Date(input.expiresAt);
    if (!RFC3339_UTC.test(input.expiresAt) || Number.isNaN(expiresAt.getTime()))
      throw new CliRefusal(`--expires-at must be an RFC 3339 UTC time like 2027-01-01T00:00:00Z`);
    if (expiresAt.getTime() <= ctx.clock.now().getTime()) throw new CliRefusal('--expires-at must be in the future');
  }
  const account = await ctx.services.accounts.accountWithEmail(input.email);
  if (!account) throw new CliRefusal(`no account with email "${input.email}"`);
  const issued = await ctx.services.accounts.createApiKey({
    accountId: account.id,
    label: input.label,
    scopes,
    expiresAt,
    issuer: { kind: 'operator' },
  });
  return operatorKeyView(issued, scopes);
}

/** `accounts spend-cap`: shows an account's spend-rate cap, or sets it (`--per-hour-micro`) or clears it (`--default`). */
export async function spendCapCommand(
  ctx: Pick<CliContext, 'services'>,
  input: { email: string; perHourMicro?: string; useDefault?: boolean; reason?: string },
) {
  const account = await ctx.services.accounts.accountWithEmail(input.email);
  if (!account) throw new CliRefusal(`no account with email "${input.email}"`);
  if (input.perHourMicro !== undefined && input.useDefault) throw new CliRefusal('give --per-hour-micro or --default, not both');
  let standing: SpendCapStanding;
  if (input.perHourMicro === undefined && !input.useDefault) standing = await ctx.services.jobs.readSpendCap(account.id);
  else {
    const reason = (input.reason ?? '').trim();
    if (reason.length < 5) throw new CliRefusal('--reason must say why, in at least 5 characters');
    let cap: bigint | null = null;
    if (input.perHourMicro !== undefined) {
      if (!/^[0-9]{1,16}$/.test(input.perHourMicro) || BigInt(input.perHourMicro) > MICRO_AMOUNT_MAX)
        throw new CliRefusal(`--per-hour-micro must be a whole number of micro-USDC per hour up to ${MICRO_AMOUNT_MAX}`);
      cap = BigInt(input.perHourMicro);
    }
    standing = await ctx.services.jobs.setSpendCapByOperator({ accountId: account.id, capMicroPerHour: cap, reason });
  }
  return operatorSpendCapView(account, standing);
}

export const accountCommands: CliCommand[] = [
  {
    name: 'accounts create',
    usage: 'accounts create --email E --role renter|host|admin [--password P] [--verified] [--name N]',
    options: {
      email: { type: 'string' },
      role: { type: 'string' },
      password: { type: 'string' },
      verified: { type: 'boolean' },
      name: { type: 'string' },
    },
    async run(values, ctx) {
      const input = {
        email: required(values, 'email'),
        role: required(values, 'role'),
        password: text(values, 'password'),
        verified: values.verified === true,
        name: text(values, 'name'),
      };
      printJson(ctx, await createAccountCommand(ctx, input));
      return 0;
    },
  },
  {
    name: 'keys create',
    usage: 'keys create --email E --scopes renter,host --label L [--expires-at 2027-01-01T00:00:00Z]',
    options: { email: { type: 'string' }, scopes: { type: 'string' }, label: { type: 'string' }, 'expires-at': { type: 'string' } },
    async run(values, ctx) {
      const input = {
        email: required(values, 'email'),
        scopes: required(values, 'scopes'),
        label: required(values, 'label'),
        expiresAt: text(values, 'expires-at'),
      };
      printJson(ctx, await createKeyCommand(ctx, input));
      return 0;
    },
  },
  {
    name: 'accounts spend-cap',
    usage: 'accounts spend-cap --email E [--per-hour-micro N --reason R | --default --reason R]',
    options: { email: { type: 'string' }, 'per-hour-micro': { type: 'string' }, default: { type: 'boolean' }, reason: { type: 'string' } },
    async run(values, ctx) {
      const input = {
        email: required(values, 'email'),
        perHourMicro: text(values, 'per-hour-micro'),
        useDefault: values.default === true,
        reason: text(values, 'reason'),
      };
      printJson(ctx, await spendCapCommand(ctx, input));
      return 0;
    },
  },
];
