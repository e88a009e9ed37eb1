import { randomUUID } from 'node:crypto';

/** One call of Ark's public HTTP API, as a tool makes it. */
export interface ArkRequest {
  method: 'GET' | 'POST';
  /** Path under the base URL, starting with /api/v1/. */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** Sends an Idempotency-Key header (a given one, else a fresh UUID): the API requires it on money and job writes. */
  idempotencyKey?: string | true;
}

/** What the API answered: the status and the parsed JSON body (null when there was none). */
export interface ArkAnswer {
  status: number;
  body: unknown;
}

/**
 * Ark's public HTTP API with one caller's credential. The stdio server reaches it over the network (httpArkApi); the
 * control plane's own /mcp endpoint calls its routes in process with the credential the MCP request carried.
 */
export type ArkApi = (request: ArkRequest) => Promise<ArkAnswer>;

/** An answer body is read up to this size; a page of 100 offers is far below it. */
const ANSWER_BYTES_MAX = 4 * 1024 * 1024;

/** The path and query string of a request (undefined query values are left out). */
export function requestTarget(request: ArkRequest): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query ?? {})) if (value !== undefined) query.set(name, String(value));
  const search = query.toString();
  return search ? `${request.path}?${search}` : request.path;
}

/** The headers of a request besides the credential. */
export function requestHeaders(request: ArkRequest): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  if (request.idempotencyKey !== undefined) {
    headers['idempotency-key'] = request.idempotencyKey === true ? randomUUID() : request.idempotencyKey;
  }
  return headers;
}

export function parseAnswerBody(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export interface HttpArkApiOptions {
  /** The control plane's public URL, e.g. https://ark.example or http://127.0.0.1:8080. */
  baseUrl: string;
  /** An API key (ark_...) or a session token, sent as the bearer credential. */
  apiKey: string;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Per request; default 30 s. */
  timeoutMs?: number;
}

/** The API over HTTP with the given key (the stdio server's case). */
export function httpArkApi(options: HttpArkApiOptions): ArkApi {
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 30_000;
  return async (request) => {
    const response = await doFetch(`${base}${requestTarget(request)}`, {
      method: request.method,
      headers: { ...requestHeaders(request), authorization: `Bearer ${options.apiKey}` },
      ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const bytes = await response.arrayBuffer();
    if (bytes.byteLength > ANSWER_BYTES_MAX)
      return { status: 502, body: { error: { code: 'ANSWER_TOO_LARGE', message: 'The answer was too large.' } } };
    return { status: response.status, body: parseAnswerBody(Buffer.from(bytes).toString('utf8')) };
  };
}
