// Text that leaves the agent (status details, failure logs) is bounded, free of control characters
// and of the job's own secrets.

/** JobStatusMessage.detail allows 2000 characters. */
export const DETAIL_MAX_CHARS = 2000;
const MIN_SECRET_CHARS = 8;

/** Strips control characters (keeping newline and tab) and keeps the last part when too long. */
export function boundedText(text: string, maxChars = DETAIL_MAX_CHARS): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point.
  const clean = text.replace(/\r\n/g, '\n').replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '');
  return clean.length <= maxChars ? clean : `…${clean.slice(clean.length - maxChars + 1)}`;
}

/** Replaces every occurrence of each secret (long enough to be one) with a marker. */
export function redact(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) {
    if (secret.length >= MIN_SECRET_CHARS) result = result.split(secret).join('[redacted]');
  }
  return result;
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
