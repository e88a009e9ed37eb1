import type { AccountRole } from '@ark/shared';
import { systemClock } from '../clock.js';
import { normalizeEmail, parseScopeList } from '../domain/accounts/account.js';
import { generatePassword, hashPassword, passwordPolicyViolation } from '../domain/accounts/password.js';
import { DomainError } from '../errors.js';
import { openConfiguredStore } from '../runtime.js';
import { findAccountByEmail, insertAccount, issueApiKey } from '../store/accounts.js';
import { appendAudit } from '../store/audit.js';
import type { Store } from '../store/db.js';
import { type CliCommand, registerCliCommands } from './index.js';

// Operator commands. Admin accounts exist only through here: sign-up never grants admin.

type Values = Parameters<CliCommand['run']>[0];

/** A refusal the operator can act on: printed to stderr, exit code 1. */
class CliRefusal extends Error {}

const ROLES: readonly AccountRole[] = ['renter', 'host', 'admin'];
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

function text(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

function required(values: Values, name: string): string {
  const value = text(values, name);
  if (value === undefined || value === '') throw new CliRefusal(`--${name} is required`);
  return value;
}

export interface CreateAccountInput {
  email: string;
  role: string;
  password?: string;
  verified?: boolean;
  name?: string;
}

/** `accounts create`: the account as JSON, with `initial_password` when one was generated. */
export async function createAccountCommand(store: Store, input: CreateAccountInput, now: Date) {
  const email = normalizeEmail(input.email);
  if (!EMAIL.test(email) || email.length > 254) throw new CliRefusal(`"${input.email}" is not an email address`);
  if (!(ROLES as readonly string[]).includes(input.role))
    throw new CliRefusal(`--role must be one of ${ROLES.join(', ')}, got "${input.role}"`);
  const role = input.role as AccountRole;
  const generated = input.password === undefined ? generatePassword() : null;
  const password = input.password ?? (generated as string);
  const violation = passwordPolicyViolation(password);
  if (violation) throw new CliRefusal(violation);
  const passwordHash = await hashPassword(password);
  const account = await store.db.transaction().execute(async (trx) => {
    const row = await insertAccount(trx, {
      email,
      passwordHash,
      name: input.name ?? null,
      role,
      emailVerified: input.verified === true,
      now,
    });
    await appendAudit(trx, { at: now, actorAccountId: null, action: 'account.created_by_operator', subject: row.id, detail: { role } });
    return row;
  });
  return {
    account_id: account.id,
    email: account.email,
    role: account.role,
    name: account.name,
    email_verified: account.email_verified_at !== null,
    created_at: account.created_at,
    ...(generated ? { initial_password: generated } : {}),
  };
}

export interface CreateKeyInput {
  email: string;
  scopes: string;
  label: string;
  expiresAt?: string;
}

/** `keys create`: the secret is printed once; only its hash is stored. */
export async function createKeyCommand(store: Store, input: CreateKeyInput, now: Date) {
  const scopes = parseScopeList(input.scopes);
  if (!scopes) throw new CliRefusal(`--scopes must be a comma list of renter and host, got "${input.scopes}"`);
  if (input.label.length < 1 || input.label.length > 200) throw new CliRefusal('--label must be 1 to 200 characters');
  let expiresAt: string | null = null;
  if (input.expiresAt !== undefined) {
    const at = new Date(input.expiresAt);
    if (!RFC3339_UTC.test(input.expiresAt) || Number.isNaN(at.getTime()))
      throw new CliRefusal(`--expires-at must be an RFC 3339 UTC time like 2027-01-01T00:00:00Z`);
    if (at.getTime() <= now.getTime()) throw new CliRefusal('--expires-at must be in the future');
    expiresAt = at.toISOString();
  }
  const account = await findAccountByEmail(store.db, normalizeEmail(input.email));
  if (!account) throw new CliRefusal(`no account with email "${input.email}"`);
  const { row, secret } = await store.db.transaction().execute(async (trx) => {
    const issued = await issueApiKey(trx, { accountId: account.id, label: input.label, scopes, expiresAt, now });
    await appendAudit(trx, {
      at: now,
      actorAccountId: null,
      action: 'api_key.created_by_operator',
      subject: issued.row.id,
      detail: { account_id: account.id, scopes },
    });
    return issued;
  });
  return { api_key_id: row.id, secret, scopes, label: row.label, account_id: account.id, expires_at: row.expires_at };
}

async function withStore(
  run: (store: Store) => Promise<unknown>,
  config: Parameters<typeof openConfiguredStore>[0],
  name: string,
): Promise<number> {
  let store: Store | null = null;
  try {
    store = await openConfiguredStore(config);
    const result = await run(store);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof CliRefusal || error instanceof DomainError) {
      const reason =
        error instanceof DomainError && error.code === 'EMAIL_TAKEN' ? 'an account with this email already exists' : error.message;
      process.stderr.write(`ark-cp ${name}: ${reason}\n`);
      return 1;
    }
    throw error;
  } finally {
    await store?.close();
  }
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
    run: (values, ctx) =>
      withStore(
        (store) =>
          createAccountCommand(
            store,
            {
              email: required(values, 'email'),
              role: required(values, 'role'),
              password: text(values, 'password'),
              verified: values.verified === true,
              name: text(values, 'name'),
            },
            systemClock.now(),
          ),
        ctx.config,
        'accounts create',
      ),
  },
  {
    name: 'keys create',
    usage: 'keys create --email E --scopes renter,host --label L [--expires-at 2027-01-01T00:00:00Z]',
    options: { email: { type: 'string' }, scopes: { type: 'string' }, label: { type: 'string' }, 'expires-at': { type: 'string' } },
    run: (values, ctx) =>
      withStore(
        (store) =>
          createKeyCommand(
            store,
            {
              email: required(values, 'email'),
              scopes: required(values, 'scopes'),
              label: required(values, 'label'),
              expiresAt: text(values, 'expires-at'),
            },
            systemClock.now(),
          ),
        ctx.config,
        'keys create',
      ),
  },
];

registerCliCommands(accountCommands);
