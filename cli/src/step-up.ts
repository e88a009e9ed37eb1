import { ApiClient } from './client.js';
import { CliError, EXIT, usageError } from './exit-codes.js';
import { secretFromStdin } from './input.js';

// Operations that move money or mint credentials need a fresh step-up (POST /api/v1/account/step-up). A password or
// TOTP code steps up an interactive session only, never an API key (a key never escalates with what a person types),
// so given a proof the CLI signs in with the account's email and password, steps that short session up (with the
// TOTP code when given, else the password), makes the one request with it and signs it out. Without a proof the
// request goes with the key as it is: an agent's key stepped up by its sign-in wallet passes.

export interface StepUpOptions {
  totp?: string;
  passwordStdin?: boolean;
}

export const STEP_UP_HELP =
  'step-up proof: the password in ARK_PASSWORD or on stdin with --password-stdin (and --totp <code> once two-factor is on)';

/**
 * Runs `operation` with a credential that may do it: a freshly stepped-up session when a proof is at hand, else the
 * key itself. A STEP_UP_REQUIRED answer without a proof says how to give one.
 */
export async function withStepUp<T>(
  api: ApiClient,
  options: StepUpOptions,
  env: NodeJS.ProcessEnv,
  operation: (api: ApiClient) => Promise<T>,
): Promise<T> {
  const password = options.passwordStdin ? await secretFromStdin('password') : env.ARK_PASSWORD || undefined;
  if (password === undefined) {
    if (options.totp !== undefined)
      throw usageError(`--totp needs the password too: signing in for the step-up asks for it (${STEP_UP_HELP})`);
    try {
      return await operation(api);
    } catch (error) {
      if (error instanceof CliError && error.code === 'STEP_UP_REQUIRED') {
        throw new CliError(EXIT.auth, 'STEP_UP_REQUIRED', `${error.message} Give a ${STEP_UP_HELP}.`, error.details);
      }
      throw error;
    }
  }
  const account = await api.get<{ email: string; account_kind?: string }>('/api/v1/account');
  if (account.account_kind === 'agent') {
    throw new CliError(
      EXIT.auth,
      'STEP_UP_WALLET_REQUIRED',
      "An agent account steps its key up with its sign-in wallet's signature (POST /api/v1/account/step-up/challenge, then " +
        'POST /api/v1/account/step-up with {wallet: {message, signature}}); run the command again without a password once it has.',
    );
  }
  const anonymous = new ApiClient(api.baseUrl, null);
  const session = await anonymous.post<{ session_token: string }>(
    '/api/v1/auth/sessions',
    { email: account.email, password },
    { anonymous: true },
  );
  const signedIn = new ApiClient(api.baseUrl, session.session_token);
  try {
    await signedIn.post('/api/v1/account/step-up', options.totp !== undefined ? { totp_code: options.totp } : { password });
    return await operation(signedIn);
  } finally {
    await signedIn.request('DELETE', '/api/v1/auth/sessions/current').catch(() => undefined);
  }
}
