import type { Account, AccountRole, ApiKeyScope } from '@ark/shared';

/** What the domain needs to know about an account, independent of how it is stored. */
export interface AccountFacts {
  id: string;
  email: string;
  name: string | null;
  role: AccountRole;
  accountKind: 'human' | 'agent';
  hostEnabled: boolean;
  emailVerified: boolean;
  totpEnabled: boolean;
  hasPassword: boolean;
  createdAt: string;
}

export type StepUpMethod = Account['step_up_method'];

/** Emails compare case-insensitively; we keep one canonical spelling so the unique index does the work. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * The proof a step-up asks for: TOTP when enrolled (a password alone is then refused), else the password; an agent
 * account (created by wallet, no password) signs a step-up challenge with its sign-in wallet.
 */
export function stepUpMethodOf(
  account: Pick<AccountFacts, 'totpEnabled' | 'hasPassword'> & { accountKind?: AccountFacts['accountKind'] },
): StepUpMethod {
  if (account.totpEnabled) return 'totp';
  if (account.hasPassword) return 'password';
  if (account.accountKind === 'agent') return 'wallet';
  return 'none';
}

/** Which proof a step-up request offers, checked against what the account demands. */
export type StepUpDecision =
  | { method: 'password'; password: string }
  | { method: 'totp'; code: string }
  | { method: 'wallet'; proof: WalletProof }
  | { refused: 'STEP_UP_TOTP_REQUIRED' | 'TOTP_NOT_ENROLLED' | 'STEP_UP_FAILED' | 'STEP_UP_WALLET_REQUIRED' | 'STEP_UP_WALLET_NOT_LINKED' };

export interface WalletProof {
  message: string;
  signature: string;
}

export function decideStepUp(
  account: Pick<AccountFacts, 'totpEnabled' | 'hasPassword'> & { accountKind?: AccountFacts['accountKind'] },
  request: { password?: string; totp_code?: string; wallet?: WalletProof },
): StepUpDecision {
  if (request.wallet !== undefined) {
    // Only agent accounts have a sign-in wallet; a human's wallet proves nothing about the human.
    if (account.accountKind !== 'agent') return { refused: 'STEP_UP_WALLET_NOT_LINKED' };
    return { method: 'wallet', proof: request.wallet };
  }
  if (request.totp_code !== undefined) {
    if (!account.totpEnabled) return { refused: 'TOTP_NOT_ENROLLED' };
    return { method: 'totp', code: request.totp_code };
  }
  if (request.password !== undefined) {
    if (account.totpEnabled) return { refused: 'STEP_UP_TOTP_REQUIRED' };
    if (!account.hasPassword) return { refused: account.accountKind === 'agent' ? 'STEP_UP_WALLET_REQUIRED' : 'STEP_UP_FAILED' };
    return { method: 'password', password: request.password };
  }
  return { refused: 'STEP_UP_FAILED' };
}

/** Keys are stored as a sorted comma list; scopes come only from this fixed set. */
const SCOPES: readonly ApiKeyScope[] = ['host', 'renter'];

export function encodeScopes(scopes: readonly ApiKeyScope[]): string {
  return SCOPES.filter((s) => scopes.includes(s)).join(',');
}

export function decodeScopes(stored: string): ApiKeyScope[] {
  return stored.split(',').filter((s): s is ApiKeyScope => (SCOPES as readonly string[]).includes(s));
}

/** Parses `renter,host` from the CLI; null when any item is not a scope or the list is empty. */
export function parseScopeList(text: string): ApiKeyScope[] | null {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0 || items.some((s) => !(SCOPES as readonly string[]).includes(s))) return null;
  return [...new Set(items as ApiKeyScope[])];
}
