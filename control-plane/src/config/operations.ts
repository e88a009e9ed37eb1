// The operator-controls part of the configuration (issue 12): where alerts go and how often an admin may run
// subsystem tests (the sign-in providers the auth-provider test checks are in config/oauth.ts). Read once by
// loadConfig; a bad value stops the server with exit code 2 and a message naming the variable.

export interface OperationsConfig {
  /** ARK_ALERT_WEBHOOK_URL: alerts (chain finality stalls, subsystem test alerts) are POSTed here as JSON; null: logged only. */
  alertWebhookUrl: string | null;
  /** ARK_SETTINGS_TESTS_PER_MIN: subsystem tests an admin may run per minute. */
  settingsTestsPerMinute: number;
}

type Env = Record<string, string | undefined>;

export function operationsConfigFrom(env: Env, fail: (message: string) => Error): OperationsConfig {
  const url = (name: string): string | null => {
    const raw = env[name];
    if (raw === undefined || raw === '') return null;
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw fail(`${name} must be an absolute http(s) URL, got "${raw}"`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw fail(`${name} must be an http(s) URL, got "${raw}"`);
    if (parsed.username || parsed.password) throw fail(`${name} must not carry credentials in the URL`);
    return raw.replace(/\/$/, '');
  };
  const perMinute = env.ARK_SETTINGS_TESTS_PER_MIN;
  if (perMinute !== undefined && perMinute !== '' && (!/^\d+$/.test(perMinute) || Number(perMinute) < 1 || Number(perMinute) > 1000)) {
    throw fail(`ARK_SETTINGS_TESTS_PER_MIN must be an integer from 1 to 1000, got "${perMinute}"`);
  }
  return {
    alertWebhookUrl: url('ARK_ALERT_WEBHOOK_URL'),
    settingsTestsPerMinute: perMinute ? Number(perMinute) : 10,
  };
}
