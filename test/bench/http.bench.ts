// HTTP throughput budgets (DESIGN.md "Budgets"), measured as ratios in one run:
//   - `GET /api/v1/account` with an API key on the real control plane (SQLite store, synchronous=FULL as money runs)
//     against a bare Fastify route answering a similar small JSON: budget >= 0.6x;
//   - an idempotent POST (`config.idempotent`, a fresh Idempotency-Key each request) against the same trivial handler
//     without the idempotency layer, both on the control plane and authenticated with the same key: budget >= 0.8x.
// There is no HTTP route that only moves money between ledger accounts yet, so the ledger-transfer-over-HTTP budget
// is not measured here (ledger-transfer.bench.ts measures the raw store loop).
//
// Each server runs in its own child process and the load comes from this one, over loopback keep-alive connections
// with one request in flight each (a lean raw-socket client: node:http's client would be the bottleneck). Every
// measurement is a warm-up and then a fixed window; answers with another status than expected fail the bench, so an
// error path can never pass for throughput.
//
// Run: pnpm exec tsx test/bench/http.bench.ts [--duration-s 5] [--warmup-s 1] [--connections 32] [--rounds 1]
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export interface LoadFigures {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

export interface HttpFigures {
  connections: number;
  durationS: number;
  rounds: number;
  /** 1-minute load average before and after, on a machine of `cpus` cores (other work on a shared VM shows here). */
  loadAvgBefore: number;
  loadAvgAfter: number;
  bareFastify: LoadFigures;
  accountWithApiKey: LoadFigures;
  /** accountWithApiKey.rps / bareFastify.rps; budget >= 0.6. */
  accountRatio: number;
  plainPost: LoadFigures;
  idempotentPost: LoadFigures;
  /** idempotentPost.rps / plainPost.rps; budget >= 0.8. */
  idempotentRatio: number;
  /** The same idempotent POST with SQLite synchronous=NORMAL (no fsync per commit): how much of the cost is the disk. */
  idempotentPostNormal: LoadFigures;
  idempotentRatioNormal: number;
  budgets: { accountRatioMin: number; idempotentRatioMin: number };
  withinBudget: { account: boolean; idempotent: boolean };
}

export interface HttpBenchOptions {
  durationS?: number;
  warmupS?: number;
  connections?: number;
  /** Measurements repeated this many times in alternating order; figures are the medians (default 1). */
  rounds?: number;
  log?: (line: string) => void;
}

// ---------------------------------------------------------------------------------------------------------------
// Servers (child processes)

/** Fastify and pino as the control plane resolves them (the test package does not depend on them): the same versions. */
const controlPlaneRequire = createRequire(fileURLToPath(new URL('../../control-plane/package.json', import.meta.url)));
const importFromControlPlane = (name: string): Promise<unknown> => import(pathToFileURL(controlPlaneRequire.resolve(name)).href);

const BENCH_ROUTE_PLAIN = '/bench/plain';
const BENCH_ROUTE_IDEMPOTENT = '/bench/idempotent';

/** The bare comparison: one Fastify route, no hooks, no logger, a small JSON like the account view. */
async function serveBare(): Promise<{ port: number; close(): Promise<void> }> {
  // The slice of Fastify's API used here (its types are not a dependency of this package).
  type Bare = {
    get(path: string, handler: () => Promise<unknown>): void;
    listen(o: { host: string; port: number }): Promise<string>;
    server: Server;
    close(): Promise<void>;
  };
  const { default: Fastify } = (await importFromControlPlane('fastify')) as { default: (options: { logger: boolean }) => Bare };
  const app = Fastify({ logger: false });
  const body = {
    account_id: randomUUID(),
    email: 'bench@example.test',
    role: 'renter',
    host_enabled: false,
    email_verified: true,
    two_factor_enabled: false,
    auth_method: 'api-key',
    step_up_method: 'password',
    name: null,
    account_kind: 'human',
    created_at: new Date().toISOString(),
  };
  app.get('/account', async () => body);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, close: () => app.close() };
}

/** The real control plane over a fresh SQLite store, with a seeded account and API key, plus the two bench routes. */
async function serveControlPlane(synchronous: 'FULL' | 'NORMAL'): Promise<{ port: number; apiKey: string; close(): Promise<void> }> {
  const { randomBytes } = await import('node:crypto');
  const { buildApp } = await import('@ark/control-plane/app');
  const { loadConfig } = await import('@ark/control-plane/config');
  const { createRuntime } = await import('@ark/control-plane/runtime');
  const { pino } = (await importFromControlPlane('pino')) as { pino: (options: { level: string }) => Parameters<typeof createRuntime>[1] };
  const { Paginator } = await import('@ark/control-plane/http/pagination');
  const { ChannelHandlers } = await import('@ark/control-plane/gateway/handlers');
  const { seedAccount } = await import('@ark/control-plane/testing/app');
  const dir = mkdtempSync(join(tmpdir(), 'ark-bench-http-'));
  const config = loadConfig({
    ARK_DATA_DIR: dir,
    ARK_SECRET_KEY: randomBytes(32).toString('hex'),
    ARK_AUTH_ATTEMPTS_PER_MIN: '10000',
    // Money runs with FULL (the default); said explicitly so the figure does not drift with the default.
    ARK_SQLITE_SYNCHRONOUS: synchronous,
    LOG_LEVEL: 'warn',
  });
  // Request logging (info) is off, as the bare route has none; errors would still be logged.
  const logger = pino({ level: 'warn' });
  const runtime = await createRuntime(config, logger);
  const app = await buildApp(runtime, { logger });
  // Same trivial handler twice, the only difference being the idempotency layer.
  const handler = async (_request: unknown, reply: { code(n: number): { send(v: unknown): unknown } }) =>
    reply.code(201).send({ ok: true });
  app.post(BENCH_ROUTE_PLAIN, { config: {} }, handler as never);
  app.post(BENCH_ROUTE_IDEMPOTENT, { config: { idempotent: true } }, handler as never);
  await app.listen({ host: '127.0.0.1', port: 0 });
  // seedAccount reads only the store, clock and config of the context.
  const seeded = await seedAccount(
    { ...runtime, paginator: new Paginator(config.secretKey), channel: new ChannelHandlers() },
    { scopes: ['renter', 'host'] },
  );
  const address = app.server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    apiKey: seeded.apiKey,
    async close() {
      await app.close();
      await runtime.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Child entry: start one server, print `{port, ...}` on one line, stop when stdin closes or on SIGTERM. */
async function serveChild(kind: string): Promise<void> {
  const server = kind === 'bare' ? await serveBare() : await serveControlPlane(kind === 'control-plane-normal' ? 'NORMAL' : 'FULL');
  const { close, ...info } = server;
  process.stdout.write(`${JSON.stringify(info)}\n`);
  let closing = false;
  const stop = async () => {
    if (closing) return;
    closing = true;
    await close();
    process.exit(0);
  };
  process.stdin.on('end', stop);
  process.stdin.resume();
  process.once('SIGTERM', stop);
}

interface Child {
  info: { port: number; apiKey?: string };
  stop(): Promise<void>;
}

async function startChild(kind: 'bare' | 'control-plane' | 'control-plane-normal'): Promise<Child> {
  const self = fileURLToPath(import.meta.url);
  // Under tsx the loader is in execArgv; elsewhere ask for it.
  const execArgv = process.execArgv.some((arg) => arg.includes('tsx')) ? process.execArgv : ['--import', 'tsx'];
  const child: ChildProcess = spawn(process.execPath, [...execArgv, self, '--serve', kind], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const timer = setTimeout(() => reject(new Error(`${kind} server did not start within 60 s`)), 60_000);
    lines.once('line', (text) => {
      clearTimeout(timer);
      resolve(text);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${kind} server exited with ${code} before listening`));
    });
  });
  return {
    info: JSON.parse(line) as Child['info'],
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.stdin?.end();
      }),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Load generator: raw keep-alive sockets, one request in flight per connection

const HEADER_END = Buffer.from('\r\n\r\n');

/**
 * Sends `request()` over `connections` sockets for `warmupMs + durationMs`; counts the answers that complete in the
 * measured window. Throws when an answer has another status than `expectStatus`.
 */
export async function load(options: {
  port: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
  request: () => string;
  expectStatus: number;
}): Promise<LoadFigures> {
  const start = performance.now();
  const measureFrom = start + options.warmupMs;
  const end = measureFrom + options.durationMs;
  const latencies: number[] = [];
  let completed = 0;
  let failure: Error | null = null;

  const connection = () =>
    new Promise<void>((resolve) => {
      const socket = connect(options.port, '127.0.0.1');
      socket.setNoDelay(true);
      let buffer: Buffer = Buffer.alloc(0);
      let sentAt = 0;
      const send = () => {
        const now = performance.now();
        if (now >= end || failure) {
          socket.destroy();
          return;
        }
        sentAt = now;
        socket.write(options.request());
      };
      socket.on('connect', send);
      socket.on('data', (chunk: Buffer) => {
        buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
        for (;;) {
          const headerEnd = buffer.indexOf(HEADER_END);
          if (headerEnd < 0) return;
          const head = buffer.toString('latin1', 0, headerEnd);
          const lengthMatch = /\r\ncontent-length:\s*(\d+)/i.exec(head);
          if (!lengthMatch) {
            failure = new Error(`an answer without content-length: ${head.slice(0, 200)}`);
            socket.destroy();
            return;
          }
          const total = headerEnd + 4 + Number(lengthMatch[1]);
          if (buffer.length < total) return;
          const status = Number(head.slice(9, 12));
          if (status !== options.expectStatus && !failure) {
            failure = new Error(`expected ${options.expectStatus}, got: ${buffer.toString('utf8', 0, Math.min(total, 600))}`);
          }
          buffer = buffer.subarray(total);
          const now = performance.now();
          if (sentAt >= measureFrom && now <= end) {
            completed++;
            latencies.push(now - sentAt);
          }
          send();
        }
      });
      socket.on('error', (error) => {
        if (!failure && performance.now() < end) failure = error;
      });
      socket.on('close', () => resolve());
    });

  await Promise.all(Array.from({ length: options.connections }, connection));
  if (failure) throw failure;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 100) / 100;
  return { requests: completed, rps: Math.round(completed / (options.durationMs / 1000)), p50Ms: at(0.5), p99Ms: at(0.99) };
}

const median = (figures: LoadFigures[]): LoadFigures => {
  const sorted = [...figures].sort((a, b) => a.rps - b.rps);
  return sorted[Math.floor((sorted.length - 1) / 2)] as LoadFigures;
};

// ---------------------------------------------------------------------------------------------------------------

export async function run(options: HttpBenchOptions = {}): Promise<HttpFigures> {
  const durationS = Math.max(1, Math.min(options.durationS ?? 5, 120));
  const warmupS = Math.max(0, Math.min(options.warmupS ?? 1, 60));
  const connections = Math.max(1, Math.min(options.connections ?? 32, 1024));
  const rounds = Math.max(1, Math.min(options.rounds ?? 1, 10));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));

  const loadAvgBefore = loadavg()[0] as number;
  const started = await Promise.allSettled([startChild('bare'), startChild('control-plane'), startChild('control-plane-normal')]);
  const children = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await Promise.all(children.map((child) => child.stop()));
    throw failed.reason;
  }
  const [bare, cp, cpNormal] = children as [Child, Child, Child];
  try {
    const apiKey = cp.info.apiKey as string;
    const common = { connections, warmupMs: warmupS * 1000, durationMs: durationS * 1000 };
    const getAccount = `GET /api/v1/account HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\n\r\n`;
    const getBare = 'GET /account HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const post =
      (path: string, key = apiKey) =>
      () =>
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nIdempotency-Key: ${randomUUID()}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;

    const measurements: Array<[string, () => Promise<LoadFigures>]> = [
      ['bare Fastify GET /account', () => load({ ...common, port: bare.info.port, request: () => getBare, expectStatus: 200 })],
      [
        'control plane GET /api/v1/account (API key)',
        () => load({ ...common, port: cp.info.port, request: () => getAccount, expectStatus: 200 }),
      ],
      [
        'control plane POST without idempotency',
        () => load({ ...common, port: cp.info.port, request: post(BENCH_ROUTE_PLAIN), expectStatus: 201 }),
      ],
      [
        'control plane POST with idempotency',
        () => load({ ...common, port: cp.info.port, request: post(BENCH_ROUTE_IDEMPOTENT), expectStatus: 201 }),
      ],
      [
        'control plane POST with idempotency, SQLite synchronous=NORMAL',
        () => load({ ...common, port: cpNormal.info.port, request: post(BENCH_ROUTE_IDEMPOTENT, cpNormal.info.apiKey), expectStatus: 201 }),
      ],
    ];
    const results = measurements.map(() => [] as LoadFigures[]);
    for (let round = 0; round < rounds; round++) {
      // Alternate the order, so neither side of a ratio always runs first on a machine that warms up or gets busier.
      const order = measurements.map((_, i) => i);
      if (round % 2 === 1) order.reverse();
      for (const i of order) {
        const [name, measure] = measurements[i] as [string, () => Promise<LoadFigures>];
        const figures = await measure();
        (results[i] as LoadFigures[]).push(figures);
        log(`http: ${name}: ${figures.rps} req/s (p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms)`);
      }
    }
    const [bareFastify, accountWithApiKey, plainPost, idempotentPost, idempotentPostNormal] = results.map(median) as [
      LoadFigures,
      LoadFigures,
      LoadFigures,
      LoadFigures,
      LoadFigures,
    ];
    const ratio = (a: LoadFigures, b: LoadFigures) => Math.round((a.rps / Math.max(1, b.rps)) * 1000) / 1000;
    const accountRatio = ratio(accountWithApiKey, bareFastify);
    const idempotentRatio = ratio(idempotentPost, plainPost);
    const budgets = { accountRatioMin: 0.6, idempotentRatioMin: 0.8 };
    return {
      connections,
      durationS,
      rounds,
      loadAvgBefore: Math.round(loadAvgBefore * 100) / 100,
      loadAvgAfter: Math.round((loadavg()[0] as number) * 100) / 100,
      bareFastify,
      accountWithApiKey,
      accountRatio,
      plainPost,
      idempotentPost,
      idempotentRatio,
      idempotentPostNormal,
      idempotentRatioNormal: ratio(idempotentPostNormal, plainPost),
      budgets,
      withinBudget: { account: accountRatio >= budgets.accountRatioMin, idempotent: idempotentRatio >= budgets.idempotentRatioMin },
    };
  } finally {
    await Promise.all([bare.stop(), cp.stop(), cpNormal.stop()]);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      serve: { type: 'string' },
      'duration-s': { type: 'string' },
      'warmup-s': { type: 'string' },
      connections: { type: 'string' },
      rounds: { type: 'string' },
    },
  });
  if (values.serve) {
    await serveChild(values.serve);
  } else {
    const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
    const figures = await run({
      durationS: num(values['duration-s']),
      warmupS: num(values['warmup-s']),
      connections: num(values.connections),
      rounds: num(values.rounds),
    });
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  }
}
