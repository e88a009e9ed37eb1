// Text that leaves the agent (status details, failure logs) is bounded, free of control characters
// and of the job's own secrets.
import { redactSecret } from '@ark/shared';

/** JobStatusMessage.detail allows 2000 characters. */
export const DETAIL_MAX_CHARS = 2000;
/** The agent's marker; the control plane sanitizes details again with its own. */
const AGENT_REDACTED = '[redacted]';

/** Strips control characters (keeping newline and tab) and keeps the last part when too long. */
export function boundedText(text: string, maxChars = DETAIL_MAX_CHARS): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point.
  const clean = text.replace(/\r\n/g, '\n').replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '');
  return clean.length <= maxChars ? clean : `…${clean.slice(clean.length - maxChars + 1)}`;
}

/** Replaces every occurrence of each secret long enough to be one (shared's rule, as the control plane applies it). */
export function redact(text: string, secrets: readonly string[]): string {
  return redactSecret(text, secrets, AGENT_REDACTED);
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
