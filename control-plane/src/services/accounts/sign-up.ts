import type { AccountRole } from '@ark/shared';
import { normalizeEmail } from '../../domain/accounts/account.js';
import { hashPassword } from '../../domain/accounts/password.js';
import { type AccountRow, insertAccount } from '../../store/accounts.js';
import { appendAudit } from '../../store/audit.js';
import { transact } from '../../store/transaction.js';
import type { AccountDeps } from './deps.js';
import { type MailOutcome, sendVerificationLink } from './verification.js';

export interface SignUpInput {
  email: string;
  password: string;
  name: string | null;
  role: AccountRole;
}

/** Self-service sign-up: an unverified account (EMAIL_TAKEN when the address is taken), then the verification mail. */
export async function signUp(deps: AccountDeps, input: SignUpInput): Promise<{ account: AccountRow; mail: MailOutcome }> {
  const passwordHash = await hashPassword(input.password);
  const now = deps.clock.now();
  const { role } = input;
  const account = await transact(deps.store, async (trx) => {
    const row = await insertAccount(trx, {
      email: normalizeEmail(input.email),
      passwordHash,
      name: input.name,
      role,
      emailVerified: false,
      now,
    });
    await appendAudit(trx, { at: now, actorAccountId: row.id, action: 'account.signed_up', subject: row.id, detail: { role } });
    return row;
  });
  return { account, mail: await sendVerificationLink(deps, account) };
}

export interface OperatorAccountInput {
  email: string;
  password: string;
  name: string | null;
  role: AccountRole;
  verified: boolean;
}

/** An account the operator creates (the only way to an admin): no mail, verified if the operator says so. */
export async function createAccountByOperator(deps: AccountDeps, input: OperatorAccountInput): Promise<AccountRow> {
  const passwordHash = await hashPassword(input.password);
  const now = deps.clock.now();
  const { role } = input;
  return transact(deps.store, async (trx) => {
    const row = await insertAccount(trx, {
      email: normalizeEmail(input.email),
      passwordHash,
      name: input.name,
      role,
      emailVerified: input.verified,
      now,
    });
    await appendAudit(trx, { at: now, actorAccountId: null, action: 'account.created_by_operator', subject: row.id, detail: { role } });
    return row;
  });
}
