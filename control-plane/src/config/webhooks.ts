// The webhook part of the configuration (issue 10). Read once by loadConfig; a bad value stops the server with exit
// code 2 and a message naming the variable.

export interface WebhooksConfig {
  /** ARK_WEBHOOK_ALLOW_PRIVATE: endpoints may be http:// and resolve to loopback, private or link-local addresses. */
  allowPrivate: boolean;
  /** ARK_WEBHOOK_POLL_INTERVAL_MS: how often the delivery worker looks for due deliveries. */
  pollIntervalMs: number;
  /** ARK_WEBHOOK_TIMEOUT_S: the whole of one attempt (connect, send, answer) must end within this. */
  timeoutMs: number;
  /** ARK_WEBHOOK_DISABLE_AFTER_S: an endpoint failing every attempt for this long is disabled. */
  disableAfterMs: number;
  /** How long a rotated-out secret keeps signing beside the new one. */
  previousSecretTtlMs: number;
  /** Deliveries one worker step sends at most (each to a different endpoint). */
  batchSize: number;
}

type Env = Record<string, string | undefined>;
/** loadConfig's integer reader: the variable's value, its default, and its bounds (a bad value stops the start). */
type IntOf = (name: string, fallback: number, min: number, max: number) => number;

export function webhooksConfigFrom(env: Env, int: IntOf, fail: (message: string) => Error): WebhooksConfig {
  const allow = env.ARK_WEBHOOK_ALLOW_PRIVATE ?? '';
  if (!['', 'true', 'false'].includes(allow)) throw fail(`ARK_WEBHOOK_ALLOW_PRIVATE must be true or false, got "${allow}"`);
  return {
    allowPrivate: allow === 'true',
    pollIntervalMs: int('ARK_WEBHOOK_POLL_INTERVAL_MS', 1000, 10, 600_000),
    timeoutMs: int('ARK_WEBHOOK_TIMEOUT_S', 15, 1, 120) * 1000,
    disableAfterMs: int('ARK_WEBHOOK_DISABLE_AFTER_S', 5 * 86400, 60, 90 * 86400) * 1000,
    previousSecretTtlMs: 24 * 3600 * 1000,
    batchSize: 32,
  };
}
