import { randomUUID } from 'node:crypto';
import { CliError, EXIT } from './exit-codes.js';

// The only way the CLI reaches Ark: the control plane's public HTTP API (contract v3), with a bearer credential.

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Sends an Idempotency-Key (a fresh UUID unless one is given): every mutating financial or job request needs one. */
  idempotent?: boolean | string;
  /** Public operations (template catalog) need no credential. */
  anonymous?: boolean;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Maps an HTTP status of an error answer onto the CLI's exit codes. */
export function exitCodeForStatus(status: number): number {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  if (status === 409) return EXIT.conflict;
  if (status === 422 || status === 400) return EXIT.usage;
  if (status === 402) return EXIT.paymentRequired;
  return EXIT.apiError;
}

export class ApiError extends CliError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    readonly retryable: boolean,
    readonly requestId: string | null,
  ) {
    super(code === 'STEP_UP_REQUIRED' ? EXIT.auth : exitCodeForStatus(status), code, message, {
      status,
      retryable,
      ...(requestId === null ? {} : { request_id: requestId }),
    });
    this.name = 'ApiError';
  }
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string | null,
    private readonly fetchImpl: typeof fetch = globalThis.fetch,
  ) {}

  get hasCredential(): boolean {
    return this.apiKey !== null;
  }

  url(path: string, query: RequestOptions['query'] = {}): string {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  headers(options: RequestOptions = {}): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    if (!options.anonymous) {
      if (this.apiKey === null) {
        throw new CliError(EXIT.auth, 'AUTH_MISSING', 'No credential: set ARK_API_KEY or run `ark login`.');
      }
      headers.authorization = `Bearer ${this.apiKey}`;
    }
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.idempotent) headers['idempotency-key'] = typeof options.idempotent === 'string' ? options.idempotent : randomUUID();
    return headers;
  }

  /** One request; answers the raw Response (for streams), throwing only when the server cannot be reached. */
  async raw(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = this.url(path, options.query);
    try {
      return await this.fetchImpl(url, {
        method,
        headers: this.headers(options),
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
    } catch (error) {
      if (error instanceof CliError) throw error;
      if ((error as Error).name === 'AbortError') throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(
        EXIT.unreachable,
        'UNREACHABLE',
        `Cannot reach ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      );
    }
  }

  /** One JSON request; a non-2xx answer becomes an ApiError carrying the envelope's code. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.raw(method, path, options);
    return (await parseAnswer(response)) as T;
  }

  get<T>(path: string, options: RequestOptions = {}): Promise<T> {
    return this.request<T>('GET', path, options);
  }

  post<T>(path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
    return this.request<T>('POST', path, { ...options, ...(body === undefined ? {} : { body }) });
  }

  /** Follows next_cursor until `max` items or the last page. */
  async all<T>(path: string, options: RequestOptions & { max?: number } = {}): Promise<T[]> {
    const max = options.max ?? 1000;
    const items: T[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.get<Page<T>>(path, {
        ...options,
        query: { ...options.query, limit: Math.min(100, max - items.length), cursor },
      });
      items.push(...page.items);
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined && items.length < max);
    return items;
  }
}

export async function parseAnswer(response: Response): Promise<unknown> {
  const text = await response.text();
  let body: unknown = null;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  if (response.ok) return body;
  const envelope = (body as { error?: { code?: unknown; message?: unknown; retryable?: unknown; request_id?: unknown } } | null)?.error;
  if (envelope !== undefined && typeof envelope === 'object' && envelope !== null && typeof envelope.code === 'string') {
    throw new ApiError(
      response.status,
      envelope.code,
      typeof envelope.message === 'string' ? envelope.message : envelope.code,
      envelope.retryable === true,
      typeof envelope.request_id === 'string' ? envelope.request_id : null,
    );
  }
  // A 402 body is the x402 payment-required shape, not the envelope.
  const x402Error = (body as { error?: unknown } | null)?.error;
  const code = response.status === 402 ? 'PAYMENT_REQUIRED' : `HTTP_${response.status}`;
  throw new ApiError(response.status, code, typeof x402Error === 'string' ? x402Error : `HTTP ${response.status}`, false, null);
}
