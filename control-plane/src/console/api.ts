import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

/** One answer of the public API, as the console sees it. */
export interface ApiAnswer<T = any> {
  status: number;
  body: T;
}

/** The error an answer carries, in a sentence for a person (the envelope's message, with its code). */
export function apiErrorText(answer: ApiAnswer): string {
  const error = answer.body?.error;
  if (error && typeof error.message === 'string') return `${error.message} (${error.code})`;
  return `The service answered ${answer.status}.`;
}

export class ApiError extends Error {
  /** A refusal (4xx) is the page's own status (a machine of someone else is not found here either); else 502. */
  readonly statusCode: number;
  constructor(readonly answer: ApiAnswer) {
    super(apiErrorText(answer));
    this.statusCode = answer.status >= 400 && answer.status < 500 ? answer.status : 502;
  }
  get code(): string | undefined {
    return this.answer.body?.error?.code;
  }
}

/**
 * The console's only way to the service: the public API, called in process with the signed-in person's own
 * credential (`app.inject` runs the same routing, authentication, validation and idempotency as a request from
 * outside). The console never reads the store.
 */
export class ConsoleApi {
  constructor(
    private readonly app: FastifyInstance,
    private readonly token: string | null,
    /** The browser's address, so per-address limits see the person, not the console. */
    private readonly remoteAddress: string,
  ) {}

  async call<T = any>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown): Promise<ApiAnswer<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    // Each form submission is one attempt: a fresh key (a repeat of the same submission is the browser's resend).
    if (method === 'POST') headers['idempotency-key'] = randomUUID();
    const response = await this.app.inject({
      method,
      url,
      headers,
      remoteAddress: this.remoteAddress,
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    const text = response.body;
    let parsed: unknown = null;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: response.statusCode, body: parsed as T };
  }

  /** GET that must succeed: anything else is an ApiError. */
  async get<T = any>(url: string): Promise<T> {
    const answer = await this.call<T>('GET', url);
    if (answer.status !== 200) throw new ApiError(answer);
    return answer.body;
  }

  /**
   * The pages of a listing, following next_cursor (`url` has a query already), at most `limit` pages; stops early
   * when `visit` answers false.
   */
  async walk<T = any>(url: string, visit: (items: T[]) => boolean | undefined, limit = 20): Promise<void> {
    let cursor: string | null = null;
    for (let pages = 0; pages < limit; pages++) {
      const page: { items: T[]; next_cursor: string | null } = await this.get(
        `${url}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      if (visit(page.items) === false) return;
      cursor = page.next_cursor;
      if (!cursor) return;
    }
  }

  /** POST that must succeed (any 2xx). */
  async post<T = any>(url: string, body?: unknown): Promise<T> {
    const answer = await this.call<T>('POST', url, body);
    if (answer.status < 200 || answer.status > 299) throw new ApiError(answer);
    return answer.body;
  }
}
