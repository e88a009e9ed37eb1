import type { ApiClient } from './client.js';
import { CliError, EXIT } from './exit-codes.js';
import { secretFromStdin } from './input.js';

// Operations that move money or mint credentials need a fresh step-up of the credential in use
// (POST /api/v1/account/step-up): a TOTP code (--totp), or the password from ARK_PASSWORD or standard input.

export interface StepUpOptions {
  totp?: string;
  passwordStdin?: boolean;
}

export const STEP_UP_HELP = 'step-up proof: --totp <code>, or the password in ARK_PASSWORD or on stdin with --password-stdin';

export async function stepUp(api: ApiClient, options: StepUpOptions, env: NodeJS.ProcessEnv): Promise<boolean> {
  let proof: Record<string, string> | null = null;
  if (options.totp !== undefined) proof = { totp_code: options.totp };
  else if (options.passwordStdin) proof = { password: await secretFromStdin('password') };
  else if (env.ARK_PASSWORD) proof = { password: env.ARK_PASSWORD };
  if (proof === null) return false;
  await api.post('/api/v1/account/step-up', proof);
  return true;
}

/** Runs `operation`; a STEP_UP_REQUIRED answer without a proof at hand says how to give one. */
export async function withStepUp<T>(
  api: ApiClient,
  options: StepUpOptions,
  env: NodeJS.ProcessEnv,
  operation: () => Promise<T>,
): Promise<T> {
  const steppedUp = await stepUp(api, options, env);
  try {
    return await operation();
  } catch (error) {
    if (!steppedUp && error instanceof CliError && error.code === 'STEP_UP_REQUIRED') {
      throw new CliError(EXIT.auth, 'STEP_UP_REQUIRED', `${error.message} Give a ${STEP_UP_HELP}.`, error.details);
    }
    throw error;
  }
}
