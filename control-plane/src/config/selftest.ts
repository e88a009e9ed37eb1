// Hardware self-tests (issue 24 item 2): which benchmark image agents run, how long a run may take, and how often
// each machine is asked. Read once by loadConfig; a bad value stops the server with exit code 2.

export interface SelftestConfig {
  /**
   * ARK_SELFTEST_IMAGE: the benchmark container, by digest (`repo@sha256:<64 hex>`); agents pull and run exactly this
   * digest. Null (unset): identity-only self-tests (nvidia-smi, CPU, RAM), no benchmark and so no score.
   */
  benchmarkImage: string | null;
  /** ARK_SELFTEST_TIMEOUT_S: the bound the agent puts on one whole run; past it the receipt says failed. */
  timeoutMs: number;
  /** ARK_SELFTEST_INTERVAL_S: how long after a machine's last requested self-test the next one is asked (daily). */
  intervalMs: number;
  /** ARK_SELFTEST_WORKER_INTERVAL_MS: how often the worker looks for machines due a self-test. */
  workerIntervalMs: number;
}

type Env = Record<string, string | undefined>;
type IntOf = (name: string, fallback: number, min: number, max: number) => number;

const DIGEST = /^[^@\s]+@sha256:[0-9a-f]{64}$/;

export function selftestConfigFrom(env: Env, int: IntOf, fail: (message: string) => Error): SelftestConfig {
  const image = env.ARK_SELFTEST_IMAGE?.trim() || null;
  if (image !== null && (image.length > 512 || !DIGEST.test(image))) {
    throw fail(`ARK_SELFTEST_IMAGE must name an image by digest (repository@sha256:<64 hex>), got "${image}"`);
  }
  return {
    benchmarkImage: image,
    timeoutMs: int('ARK_SELFTEST_TIMEOUT_S', 600, 10, 1800) * 1000,
    intervalMs: int('ARK_SELFTEST_INTERVAL_S', 86_400, 60, 30 * 86_400) * 1000,
    workerIntervalMs: int('ARK_SELFTEST_WORKER_INTERVAL_MS', 60_000, 100, 24 * 3600 * 1000),
  };
}
