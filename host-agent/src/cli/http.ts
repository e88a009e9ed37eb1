export interface JsonResponse {
  status: number;
  body: unknown;
}

const REQUEST_TIMEOUT_MS = 15_000;
const RESPONSE_CHARS_MAX = 64 * 1024;

/** POSTs JSON and reads a JSON answer; network failures reject, HTTP errors resolve with their status. */
export async function postJson(fetchImpl: typeof fetch, url: string, body: unknown): Promise<JsonResponse> {
  const response = await fetchImpl(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    redirect: 'error',
  });
  const text = (await response.text()).slice(0, RESPONSE_CHARS_MAX);
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = { raw: text.slice(0, 200) };
  }
  return { status: response.status, body: parsed };
}

/** The contract's error envelope as one line: "CODE: message". */
export function describeErrorBody(response: JsonResponse): string {
  const error = (response.body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (error && typeof error.code === 'string') {
    return typeof error.message === 'string' ? `${error.code}: ${error.message}` : error.code;
  }
  return `HTTP ${response.status}`;
}

export function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'the request timed out';
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error) return `${error.message}: ${(cause as NodeJS.ErrnoException).code ?? cause.message}`;
    return error.message;
  }
  return String(error);
}
