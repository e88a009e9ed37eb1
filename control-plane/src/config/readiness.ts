// Verified readiness (issue 24 item 1): before STARTING -> RUNNING the control plane completes an SSH handshake with
// the job's access endpoint and checks the host key the agent reported (and, for model jobs, reads the engine's model
// list through the relay). These bound that check. Read once by loadConfig; a bad value stops the server with exit
// code 2 and a message naming the variable.

export interface ReadinessConfig {
  /**
   * ARK_READINESS_VERIFY: `on` (the default) or `off`. Off is a bench and operations switch only: the meter then
   * starts at the agent's own ready time, as before verification existed (the bench's baseline; an operator's escape
   * hatch while a network path to the rigs is being fixed). Never run a marketplace with it off.
   */
  verify: boolean;
  /** ARK_READINESS_CONNECT_TIMEOUT_MS: the TCP connect to the job's SSH endpoint. */
  connectTimeoutMs: number;
  /** ARK_READINESS_HANDSHAKE_TIMEOUT_MS: from connected to the SSH key exchange done (the host key checked). */
  handshakeTimeoutMs: number;
  /** ARK_READINESS_ENGINE_TIMEOUT_MS: a model job's engine answering its model list through the relay. */
  engineTimeoutMs: number;
  /** ARK_READINESS_CONCURRENCY: verifications in flight at once in one control-plane process. */
  concurrency: number;
  /** ARK_READINESS_RETRY_MAX_MS: the longest wait between two attempts (the backoff doubles from 250 ms up to it). */
  retryMaxMs: number;
}

type Env = Record<string, string | undefined>;
/** loadConfig's integer reader: the variable's value, its default, and its bounds (a bad value stops the start). */
type IntOf = (name: string, fallback: number, min: number, max: number) => number;

export function readinessConfigFrom(env: Env, int: IntOf, fail: (message: string) => Error): ReadinessConfig {
  const verifyText = (env.ARK_READINESS_VERIFY ?? 'on').trim().toLowerCase();
  if (verifyText !== 'on' && verifyText !== 'off') throw fail(`ARK_READINESS_VERIFY must be on or off, got "${env.ARK_READINESS_VERIFY}"`);
  return Object.freeze({
    verify: verifyText === 'on',
    connectTimeoutMs: int('ARK_READINESS_CONNECT_TIMEOUT_MS', 3_000, 50, 60_000),
    handshakeTimeoutMs: int('ARK_READINESS_HANDSHAKE_TIMEOUT_MS', 5_000, 50, 60_000),
    engineTimeoutMs: int('ARK_READINESS_ENGINE_TIMEOUT_MS', 10_000, 100, 300_000),
    concurrency: int('ARK_READINESS_CONCURRENCY', 32, 1, 4096),
    retryMaxMs: int('ARK_READINESS_RETRY_MAX_MS', 5_000, 250, 600_000),
  });
}
