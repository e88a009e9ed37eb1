// Verified readiness (contract part 3: STARTING -> RUNNING on "verified readiness of the machine"; issue 24 item 1).
// The agent's word that a job is ready is where verification begins, not where the meter starts: the control plane
// itself completes an SSH handshake with the endpoint the access answer will hand the renter, checks that the host key
// presented there is the one the agent reported, and for a model job reads the engine's model list through the relay.
// The meter starts at that verification. Pure: the verifier (services/jobs/readiness.ts) runs the probes and applies
// these decisions.

/** The first wait after a failed attempt; each later one doubles, up to the configured maximum. */
export const READINESS_FIRST_RETRY_MS = 250;

/** What one verification found, when everything checked out. */
export interface ReadinessEvidence {
  endpoint: { host: string; port: number };
  sshHostKeyFingerprint: string;
  /** When the host key was seen and matched: the meter's start. */
  verifiedAt: Date;
  /** Model jobs: the engine's model ids, as it listed them through the relay (at most MAX_MODELS_RECORDED). */
  models: string[] | null;
}

export const MAX_MODELS_RECORDED = 20;

/** The outcome of one attempt, as the probes saw it. */
export type ReadinessAttempt = { ok: true; evidence: ReadinessEvidence } | { ok: false; reason: string };

/**
 * Compares the key the endpoint presented with the one the agent reported (both `SHA256:<base64>`, as OpenSSH prints
 * them and the agent reports them). A mismatch is a failed attempt: someone else answers at the renter's address.
 */
export function checkHostKey(endpoint: { host: string; port: number }, reported: string, presented: string): string | null {
  if (presented === reported) return null;
  return `the SSH endpoint ${endpointText(endpoint)} presented host key ${presented}, not ${reported} as the machine reported`;
}

/** A model job's engine must list at least one model. */
export function checkModels(models: readonly string[]): string | null {
  return models.length > 0 ? null : "the job's engine listed no models";
}

export function endpointText(endpoint: { host: string; port: number }): string {
  return endpoint.host.includes(':') ? `[${endpoint.host}]:${endpoint.port}` : `${endpoint.host}:${endpoint.port}`;
}

/**
 * After a failed attempt: try again after a doubling wait (never past the deadline: the last attempt runs at it), or
 * give up once the deadline (reservation + start timeout) has passed.
 */
export function afterFailedAttempt(input: {
  attemptsBefore: bigint;
  now: Date;
  deadline: Date;
  retryMaxMs: number;
}): { outcome: 'retry'; attempts: bigint; nextAttemptAt: Date } | { outcome: 'give_up' } {
  if (input.now.getTime() >= input.deadline.getTime()) return { outcome: 'give_up' };
  const attempts = input.attemptsBefore + 1n;
  const exponent = Number(attempts < 20n ? attempts - 1n : 19n);
  const waitMs = Math.min(input.retryMaxMs, READINESS_FIRST_RETRY_MS * 2 ** exponent);
  const next = Math.min(input.now.getTime() + waitMs, input.deadline.getTime());
  return { outcome: 'retry', attempts, nextAttemptAt: new Date(next) };
}

/** The deadline of a job's verification: its start timeout, counted from the reservation. */
export function readinessDeadlineOf(createdAt: Date, startTimeoutMs: number): Date {
  return new Date(createdAt.getTime() + startTimeoutMs);
}

/** The job event and machine problem texts. */
export const READINESS_MESSAGES = {
  reported: 'The machine reports the job ready; the control plane is verifying its endpoint before the meter starts.',
  retrying: (reason: string) => `Readiness not verified yet (${reason}); retrying until the start timeout.`,
  failed: (reason: string) => `The job's endpoint could not be verified before the start timeout: ${reason}.`,
  machineProblem: (jobId: string, reason: string) => `job ${jobId}: readiness could not be verified: ${reason}`,
  running: 'Running: readiness verified (SSH host key checked at the access endpoint), the meter started.',
} as const;
