// Stable exit codes: scripts branch on these, so a number never changes meaning (cli/README.md lists them).

export const EXIT = {
  ok: 0,
  /** The control plane answered an error (its envelope's code is printed). */
  apiError: 1,
  /** Bad arguments or input: nothing was sent, or the server refused the input (422). */
  usage: 2,
  /** No credential configured, the credential was refused (401), lacks a scope or role (403), or a step-up proof is missing. */
  auth: 3,
  /** The thing named does not exist, or is not the caller's (404). */
  notFound: 4,
  /** A conflict: a version, state or idempotency conflict (409). */
  conflict: 5,
  /** The control plane could not be reached. */
  unreachable: 6,
  /** A job being waited for ended FAILED (or otherwise not RUNNING), or the wait timed out. */
  jobFailed: 7,
  /** A payment was required or refused (x402, 402). */
  paymentRequired: 8,
  /** `ark machines verify`: a hardware receipt failed its check, or there was none to check. */
  verificationFailed: 9,
  /** Interrupted (Ctrl-C). */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports and maps onto an exit code; `code` is a stable SCREAMING_SNAKE name for --json. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function usageError(message: string): CliError {
  return new CliError(EXIT.usage, 'USAGE', message);
}
