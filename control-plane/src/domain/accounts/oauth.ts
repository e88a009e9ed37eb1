// Sign-in with a provider (issue 13): what a provider's answer does to accounts. Pure: the service loads the facts
// and writes the outcome.

export interface ProviderAnswer {
  email: string | null;
  emailVerified: boolean;
}

export type ProviderSignInDecision =
  /** The identity is linked already: a session for its account. */
  | { kind: 'signed-in'; accountId: string }
  /** An account has this verified email: link the identity to it, then a session. */
  | { kind: 'link'; accountId: string }
  /** Nobody has this email: a new human account, verified by the provider, with the identity linked. */
  | { kind: 'create'; email: string }
  | { refused: 'OAUTH_EMAIL_UNVERIFIED' | 'OAUTH_ACCOUNT_UNVERIFIED' };

/**
 * Only an address the provider verified links or creates anything, and only to an account whose own address was
 * verified too: an unverified account with that address may have been opened by someone else, waiting for its owner
 * to sign in with a provider and hand it over.
 */
export function decideProviderSignIn(
  answer: ProviderAnswer,
  linkedAccountId: string | null,
  accountWithEmail: { id: string; emailVerified: boolean } | null,
  normalizedEmail: string | null,
): ProviderSignInDecision {
  if (!answer.emailVerified || answer.email === null || normalizedEmail === null) return { refused: 'OAUTH_EMAIL_UNVERIFIED' };
  if (linkedAccountId !== null) return { kind: 'signed-in', accountId: linkedAccountId };
  if (accountWithEmail === null) return { kind: 'create', email: normalizedEmail };
  if (!accountWithEmail.emailVerified) return { refused: 'OAUTH_ACCOUNT_UNVERIFIED' };
  return { kind: 'link', accountId: accountWithEmail.id };
}
