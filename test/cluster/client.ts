// The workload's HTTP client: every request goes through the load balancer; a mutation carries an Idempotency-Key and
// is retried with the same key on a network error or a retryable answer (as a careful client does), and its first
// final answer is kept so the checks can replay it through every replica. Answers are counted by status; a 500 is
// an invariant break (a fault must give a retryable answer), kept with its body.
import { randomUUID } from 'node:crypto';

export interface Answer {
  status: number;
  body: any;
}

export interface Mutation {
  key: string;
  token: string;
  method: string;
  path: string;
  body: unknown;
  first: Answer;
}

async function send(base: string, method: string, path: string, token: string, body: unknown, key?: string): Promise<Answer> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token !== '') headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key !== undefined) headers['idempotency-key'] = key;
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    // HAProxy's own 503 page is HTML.
  }
  return { status: response.status, body: parsed };
}

/**
 * An answer as the replay compares it: a refusal made before the handler (validation, auth) is not stored, so its
 * replay is a new request with its own request_id; everything else must be the same bytes of JSON.
 */
function comparable(body: any): string {
  if (body?.error?.request_id === undefined) return JSON.stringify(body);
  return JSON.stringify({ ...body, error: { ...body.error, request_id: undefined } });
}

export class WorkloadClient {
  readonly mutations: Mutation[] = [];
  readonly statuses = new Map<string, number>();
  readonly internalErrors: Answer[] = [];
  requests = 0;
  retries = 0;

  constructor(readonly lbBase: string) {}

  #count(what: string): void {
    this.statuses.set(what, (this.statuses.get(what) ?? 0) + 1);
  }

  /** One request through the load balancer, retried while the answer is retryable or the connection failed. */
  async call(
    method: string,
    path: string,
    token: string,
    body?: unknown,
    options: { key?: string; deadlineMs?: number } = {},
  ): Promise<Answer> {
    const deadline = Date.now() + (options.deadlineMs ?? 90_000);
    for (let attempt = 0; ; attempt++) {
      this.requests++;
      if (attempt > 0) this.retries++;
      let answer: Answer | null = null;
      try {
        answer = await send(this.lbBase, method, path, token, body, options.key);
        this.#count(String(answer.status));
        if (answer.status === 500) this.internalErrors.push(answer);
      } catch (error) {
        this.#count(`network:${(error as Error).name}`);
      }
      const retryable =
        answer === null ||
        answer.status === 500 ||
        answer.status === 502 ||
        answer.status === 503 ||
        answer.status === 504 ||
        answer.body?.error?.code === 'IDEMPOTENCY_IN_PROGRESS' ||
        answer.body?.error?.retryable === true;
      if (answer !== null && !retryable) return answer;
      if (Date.now() > deadline) {
        if (answer !== null) return answer;
        throw new Error(`${method} ${path}: no answer before the deadline`);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 100 * 2 ** Math.min(attempt, 4))));
    }
  }

  /** A mutation with a fresh Idempotency-Key; its final answer is kept for the replay check. */
  async mutate(method: string, path: string, token: string, body: unknown): Promise<Answer> {
    const key = randomUUID();
    const first = await this.call(method, path, token, body, { key });
    this.mutations.push({ key, token, method, path, body, first });
    return first;
  }

  /** Replays every kept mutation directly at each replica; answers the ones whose answer differs. */
  async replayThrough(replicaBases: readonly string[]): Promise<string[]> {
    const differences: string[] = [];
    for (const mutation of this.mutations) {
      if (mutation.first.status >= 500) continue;
      for (const base of replicaBases) {
        const again = await send(base, mutation.method, mutation.path, mutation.token, mutation.body, mutation.key);
        if (again.status !== mutation.first.status || comparable(again.body) !== comparable(mutation.first.body)) {
          differences.push(
            `${mutation.method} ${mutation.path} key ${mutation.key} via ${base}: first ${mutation.first.status} ${JSON.stringify(mutation.first.body)}, replay ${again.status} ${JSON.stringify(again.body)}`,
          );
        }
      }
    }
    return differences;
  }
}
