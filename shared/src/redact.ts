// One rule for taking a job's own secrets out of text before it leaves a process (agent status details, control-plane
// job events), so the agent and the control plane agree on what counts as a secret.

/** Shorter values are not redacted by value: "1" or "yes" would blot out every message. */
export const SECRET_MIN_CHARS = 6;
export const REDACTED = '[REDACTED]';

/**
 * Replaces every occurrence of each secret at least SECRET_MIN_CHARS long with `marker`. Longest first, so a secret
 * that contains another is redacted whole.
 */
export function redactSecret(text: string, secrets: readonly string[], marker: string = REDACTED): string {
  const values = [...new Set(secrets.filter((s) => s.length >= SECRET_MIN_CHARS))].sort((a, b) => b.length - a.length);
  let out = text;
  for (const value of values) out = out.split(value).join(marker);
  return out;
}
