// HTTP throughput budgets (DESIGN.md "Budgets"), measured as ratios in one run:
//   - `GET /api/v1/account` with an API key on the real control plane (SQLite store, synchronous=FULL as money runs)
//     against a bare Fastify route answering a similar small JSON: budget >= 0.6x;
//   - an idempotent POST (`config.idempotent`, a fresh Idempotency-Key each request) against the same handler without
//     the idempotency layer, both on the control plane and authenticated with the same key: budget >= 0.8x. The
//     handler is a real store write: one ledger transfer (reservation or release between seeded accounts) in a use
//     case's transaction (`transact`); the idempotent side is crash-safe as every idempotent route is: its answer is
//     written inside that same transaction (`answerInTransaction`), so it adds a claim and one insert, not a commit;
//   - that plain POST is also the ledger transfer over HTTP (SQLite synchronous=FULL): budget >= 1,000/s and >= 0.25x
//     the raw store loop of ledger-transfer.bench.ts, run here in the same run.
// The same pair of POSTs runs with synchronous=NORMAL too, to show what the fsync per commit costs.
// The contract floor, not budgeted, puts the account ratio in context: bare Fastify doing only the per-request work
// the contract asks of that read (serveContractFloor), measured against bare Fastify in slices of its own.
//
// Each server runs in its own child process and the load comes from this one, over loopback keep-alive connections
// with one request in flight each (a lean raw-socket client: node:http's client would be the bottleneck). The two
// sides of each ratio are measured in alternating one-second slices after a warm-up each (nine a side by default), and
// a budgeted ratio is the median of the ratios of adjacent slices: a burst of other work on a shared machine lands in
// one or two slices and is left out, where it would move a ratio of totals. (The ratios of totals are reported too.)
// Each side also reports the server's CPU time per request (from /proc). The control planes start as main.ts starts
// one: schemas compiled, then one full collection before listening (control-plane/src/startup/collect-garbage.ts); one more
// control plane, started without that collection, is measured for reference. Answers with another status than expected
// fail the bench, so an error path can never pass for throughput.
//
// Run: pnpm exec tsx test/bench/http.bench.ts [--duration-s 9] [--warmup-s 1] [--connections 32]
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export interface LoadFigures {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time (user + system) the server process spent per answered request, in microseconds (Linux; else null). */
  serverCpuUsPerRequest: number | null;
  /** Requests per second of each one-second slice, in the order measured (for the paired ratios). */
  sliceRps: number[];
}

export interface HttpFigures {
  connections: number;
  /** Seconds measured per side of each ratio (in one-second slices, alternating with the other side). */
  durationS: number;
  /** 1-minute load average before and after, on a machine of `cpus` cores (other work on a shared VM shows here). */
  loadAvgBefore: number;
  loadAvgAfter: number;
  cpus: number;
  bareFastify: LoadFigures;
  accountWithApiKey: LoadFigures;
  /**
   * The median, over the pairs of adjacent one-second slices, of accountWithApiKey's slice throughput over bare
   * Fastify's: budget >= 0.6. A burst of other work on the machine lands in one or two slices and moves the ratio of
   * the totals; the median of the pairs leaves it out.
   */
  accountRatio: number;
  /** accountWithApiKey.rps / bareFastify.rps: the ratio of the totals (this figure before the paired median). */
  accountRatioOfTotals: number;
  /**
   * Server processes per side of the budgeted account pair. One process is one sample: two control planes of the
   * same code differ by up to a fifth in CPU per request (where the kernel puts their heap and code), so each pair of
   * processes is measured in turn and accountRatio is the median over the slices of all of them.
   */
  processes: number;
  /** The paired ratio of each pair of processes alone, in the order measured. */
  accountRatioByProcess: number[];
  /** The control plane's CPU per request in each of its processes (bareFastify and accountWithApiKey give medians). */
  accountCpuUsByProcess: Array<number | null>;
  /** The same in server CPU per request (bare / control plane): what the ratio would be with a core each. */
  accountCpuRatio: number | null;
  /**
   * The floor the contract sets: bare Fastify doing only the per-request work the contract asks of the account read
   * (serveContractFloor), measured paired with bare Fastify. No budget: it says how much of the gap is the contract's.
   */
  contractFloor: LoadFigures;
  /** The median of the paired slice ratios, contractFloor over bareFastify (as accountRatio). */
  contractFloorRatio: number;
  /** The account read on a control plane logging each request at 'info' (the production default), to /dev/null. */
  accountWithInfoLogging: LoadFigures;
  /**
   * The account read on a control plane started without the one full collection main.ts runs before listening
   * (startup/collect-garbage.ts), measured alongside the info-logging side: what the hidden-class table left full by schema
   * compilation costs each request.
   */
  accountWithoutStartupCollection: LoadFigures;
  /**
   * The account read on a control plane started without keeping one of Node's tick objects first (startup/keep-tick-maps.ts),
   * measured alongside the two above: what megamorphic `process.nextTick` caches cost each request.
   */
  accountWithoutTickMaps: LoadFigures;
  /** POST doing one ledger transfer, no idempotency layer (SQLite synchronous=FULL). */
  plainPost: LoadFigures;
  /** The same POST with `config.idempotent` and a fresh key per request. */
  idempotentPost: LoadFigures;
  /** The median of the paired slice ratios, idempotentPost over plainPost (as accountRatio); budget >= 0.8. */
  idempotentRatio: number;
  /** idempotentPost.rps / plainPost.rps: the ratio of the totals. */
  idempotentRatioOfTotals: number;
  /** The same pair with SQLite synchronous=NORMAL (no fsync per commit): how much of the cost is the disk. */
  plainPostNormal: LoadFigures;
  idempotentPostNormal: LoadFigures;
  idempotentRatioNormal: number;
  /**
   * Ledger transfers over HTTP (plainPost) against the raw store loop (ledger-transfer.bench.ts) in the same run:
   * the loop runs before and after the servers' load, and the faster of the two is compared.
   */
  ledgerTransfer: { httpPerSecond: number; rawLoopPerSecond: number; rawLoopRuns: number[]; ratio: number };
  budgets: { accountRatioMin: number; idempotentRatioMin: number; ledgerHttpPerSecondMin: number; ledgerHttpRatioMin: number };
  withinBudget: { account: boolean; idempotent: boolean; ledgerTransferOverHttp: boolean };
}

export interface HttpBenchOptions {
  /** Seconds measured per side of each ratio (default 5). */
  durationS?: number;
  warmupS?: number;
  connections?: number;
  /** Transfers of the raw store loop (default 2000). */
  rawLoopCount?: number;
  /** Server processes per side of the budgeted account pair (default 3). */
  processes?: number;
  log?: (line: string) => void;
}

// ---------------------------------------------------------------------------------------------------------------
// Servers (child processes)

/** Fastify and pino as the control plane resolves them (the test package does not depend on them): the same versions. */
const controlPlaneRequire = createRequire(fileURLToPath(new URL('../../control-plane/package.json', import.meta.url)));
const importFromControlPlane = (name: string): Promise<unknown> => import(pathToFileURL(controlPlaneRequire.resolve(name)).href);

const BENCH_ROUTE_PLAIN = '/bench/plain';
const BENCH_ROUTE_IDEMPOTENT = '/bench/idempotent';

/** The account view both lean servers answer, shaped as the control plane's. */
const benchAccount = () => ({
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
});

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
  const body = benchAccount();
  app.get('/account', async () => body);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, close: () => app.close() };
}

/**
 * Bare Fastify plus only what the contract asks of every authenticated read, written as lean as it can be, to put
 * the account ratio in context: the API's security headers, a fresh request id and `private, no-store` (one
 * callback-style onRequest hook); the bearer credential (its sha256 looked up in a Map, 401 without it; a second
 * hook); the answer through the contract's Account schema; and one onResponse hook counting requests and their
 * durations, as the metrics do. No store, no logger, no idempotency, no routes but this one.
 */
async function serveContractFloor(): Promise<{ port: number; apiKey: string; close(): Promise<void> }> {
  // The slice of Fastify's API used here (its types are not a dependency of this package).
  type Request = { id: string; headers: Record<string, string | undefined>; owner: object | null };
  type Reply = { header(name: string, value: string): Reply; code(status: number): Reply; send(body: unknown): Reply; elapsedTime: number };
  type Floor = {
    decorateRequest(name: 'owner', value: null): void;
    addHook(name: 'onRequest' | 'onResponse', hook: (request: Request, reply: Reply, done: () => void) => void): void;
    get(path: string, options: { schema: unknown }, handler: (request: Request) => unknown): void;
    listen(o: { host: string; port: number }): Promise<string>;
    server: Server;
    close(): Promise<void>;
  };
  const { default: Fastify } = (await importFromControlPlane('fastify')) as {
    default: (options: { logger: boolean; genReqId: () => string; requestIdHeader: boolean }) => Floor;
  };
  const { securityHeaders } = await import('@ark/control-plane/http/security-headers');
  const { Account } = await import('@ark/shared');
  const { hash } = await import('node:crypto');
  const app = Fastify({ logger: false, genReqId: () => randomUUID(), requestIdHeader: false });
  const headers = Object.entries(securityHeaders('http://127.0.0.1'));
  app.addHook('onRequest', (request, reply, done) => {
    for (const [name, value] of headers) reply.header(name, value);
    reply.header('x-request-id', request.id).header('cache-control', 'private, no-store');
    done();
  });
  const apiKey = `ark_${randomUUID().replaceAll('-', '')}`;
  const account = benchAccount();
  const keys = new Map([[hash('sha256', apiKey, 'hex'), account]]);
  app.decorateRequest('owner', null);
  const BEARER = /^Bearer ([\x21-\x7e]{1,512})$/;
  app.addHook('onRequest', (request, reply, done) => {
    const token = BEARER.exec(request.headers.authorization ?? '')?.[1];
    const owner = token === undefined ? undefined : keys.get(hash('sha256', token, 'hex'));
    if (owner === undefined) return reply.code(401).send({ error: { code: 'UNAUTHENTICATED' } });
    request.owner = owner;
    done();
  });
  let answered = 0;
  let seconds = 0;
  app.addHook('onResponse', (_request, reply, done) => {
    answered++;
    seconds += reply.elapsedTime / 1000;
    done();
  });
  app.get('/api/v1/account', { schema: { response: { 200: Account } } }, (request) => request.owner);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    apiKey,
    close: async () => {
      await app.close();
      process.stderr.write(`http: contract floor answered ${answered} requests in ${Math.round(seconds * 10) / 10} s of handling\n`);
    },
  };
}

/**
 * The real control plane over a fresh SQLite store, with a seeded account and API key, plus the two bench routes: the
 * same ledger-transfer handler with and without the idempotency layer. `infoLogging`: log each request at 'info'
 * (the production default) to /dev/null, instead of warnings only.
 */
async function serveControlPlane(
  synchronous: 'FULL' | 'NORMAL',
  infoLogging = false,
  collectGarbage = true,
  keepTickMaps = true,
): Promise<{ port: number; apiKey: string; close(): Promise<void> }> {
  // As main.ts starts it: Node's tick-object maps kept before anything else loads (startup/keep-tick-maps.ts).
  if (keepTickMaps) await import('@ark/control-plane/startup/keep-tick-maps');
  const { randomBytes } = await import('node:crypto');
  const { buildApp } = await import('@ark/control-plane/app');
  const { loadConfig } = await import('@ark/control-plane/config/index');
  const { createRuntime } = await import('@ark/control-plane/runtime');
  const { systemClock } = await import('@ark/control-plane/clock');
  const { ledgerAccounts } = await import('@ark/control-plane/domain/ledger/accounts');
  const { runTransfer, transfer } = await import('@ark/control-plane/store/ledger');
  const { transact } = await import('@ark/control-plane/store/transaction');
  const { answerInTransaction } = await import('@ark/control-plane/http/idempotency');
  type Logger = Parameters<typeof createRuntime>[1];
  const { pino } = (await importFromControlPlane('pino')) as {
    pino: ((options: { level: string }, destination?: unknown) => Logger) & { destination(path: string): unknown };
  };
  const { Paginator } = await import('@ark/control-plane/http/pagination');
  const { ChannelHandlers } = await import('@ark/control-plane/gateway/handlers');
  const { seedAccount } = await import('@ark/control-plane/testing/app');
  const { collectStartupGarbage } = await import('@ark/control-plane/startup/collect-garbage');
  const dir = mkdtempSync(join(tmpdir(), 'ark-bench-http-'));
  const config = loadConfig({
    ARK_DATA_DIR: dir,
    ARK_SECRET_KEY: randomBytes(32).toString('hex'),
    ARK_AUTH_ATTEMPTS_PER_MIN: '10000',
    // Money runs with FULL (the default); said explicitly so the figure does not drift with the default.
    ARK_SQLITE_SYNCHRONOUS: synchronous,
    LOG_LEVEL: 'warn',
  });
  // Request logging (info) is off, as the bare route has none; errors would still be logged. The info variant writes
  // every line (two per request) synchronously to /dev/null: the formatting cost without a terminal's.
  const logger = infoLogging ? pino({ level: 'info' }, pino.destination('/dev/null')) : pino({ level: 'warn' });
  const runtime = await createRuntime(config, logger, systemClock);
  const app = await buildApp(runtime, { logger });

  // The handler both POST routes run: one ledger transfer in its own transaction (lock both balance rows, check,
  // insert the posting, update both balances, commit), alternating reservation and release on a few renters whose
  // balances are seeded far beyond what a run can move, so no request ever meets an empty account.
  const renters = Array.from({ length: 8 }, () => randomUUID());
  const at = new Date();
  for (const renter of renters) {
    const available = ledgerAccounts.available(renter);
    await runTransfer(runtime.store, {
      from: ledgerAccounts.external(),
      to: available,
      amountMicro: 10n ** 15n,
      kind: 'deposit',
      reference: 'seed',
      at,
    });
    const hold = ledgerAccounts.hold(`${renter}-job`, renter);
    await runTransfer(runtime.store, { from: available, to: hold, amountMicro: 10n ** 12n, kind: 'reservation', reference: 'seed', at });
  }
  let transfers = 0;
  const nextTransfer = () => {
    const n = transfers++;
    const renter = renters[n % renters.length] as string;
    const available = ledgerAccounts.available(renter);
    const hold = ledgerAccounts.hold(`${renter}-job`, renter);
    const reserve = Math.floor(n / renters.length) % 2 === 0;
    return {
      from: reserve ? available : hold,
      to: reserve ? hold : available,
      amountMicro: 1_000n,
      kind: reserve ? ('reservation' as const) : ('release' as const),
      reference: `${renter}-job`,
      at: runtime.clock.now(),
    };
  };
  type Reply = { code(n: number): { send(v: unknown): unknown } };
  const view = (result: { postingId: string | null }) => ({ posting_id: result.postingId });
  // The plain route: the use case's transaction, no idempotency layer.
  const plain = async (_request: unknown, reply: Reply) => {
    const result = await transact(runtime.store, (trx) => transfer(trx, nextTransfer()));
    return reply.code(201).send(view(result));
  };
  // The idempotent route, crash-safe as every idempotent route is: the answer is written inside the same transaction.
  const idempotent = async (request: never, reply: never) => {
    const result = await transact(runtime.store, (trx) => transfer(trx, nextTransfer()), answerInTransaction(request, reply, 201, view));
    return (reply as Reply).code(201).send(view(result));
  };
  // Both answer through a response schema, as every real route does; the answer carries no secret, so the idempotent
  // route's stored answers are not sealed (those of routes whose answers can hold one, like key creation, are).
  const schema = {
    response: {
      201: {
        type: 'object',
        properties: { posting_id: { type: ['string', 'null'] } },
        required: ['posting_id'],
        additionalProperties: false,
      },
    },
  };
  app.post(BENCH_ROUTE_PLAIN, { config: { auth: {} }, schema }, plain as never);
  app.post(BENCH_ROUTE_IDEMPOTENT, { config: { auth: {}, idempotent: true }, schema }, idempotent as never);
  // As main.ts starts it: schemas compiled, then what compiling them left collected once (startup/collect-garbage.ts).
  await app.ready();
  if (collectGarbage) collectStartupGarbage();
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
  const server =
    kind === 'bare'
      ? await serveBare()
      : kind === 'contract-floor'
        ? await serveContractFloor()
        : await serveControlPlane(
            kind === 'control-plane-normal' ? 'NORMAL' : 'FULL',
            kind === 'control-plane-info',
            kind !== 'control-plane-uncollected',
            kind !== 'control-plane-ticks-unkept',
          );
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
  pid: number;
  stop(): Promise<void>;
}

type ChildKind =
  | 'bare'
  | 'contract-floor'
  | 'control-plane'
  | 'control-plane-normal'
  | 'control-plane-info'
  | 'control-plane-uncollected'
  | 'control-plane-ticks-unkept';

async function startChild(kind: ChildKind): Promise<Child> {
  const self = fileURLToPath(import.meta.url);
  // Under tsx the loader is in execArgv; elsewhere ask for it.
  const execArgv = process.execArgv.some((arg) => arg.includes('tsx')) ? process.execArgv : ['--import', 'tsx'];
  const child: ChildProcess = spawn(process.execPath, [...execArgv, self, '--serve', kind], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const timer = setTimeout(() => reject(new Error(`${kind} server did not start within 240 s`)), 240_000);
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
    pid: child.pid as number,
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

interface Slice {
  /** Answers to requests sent in the window (the throughput). */
  completed: number;
  latencies: number[];
  /** Answers that arrived in the window, whenever sent: the work the window's CPU time paid for. */
  answeredInWindow: number;
  /** Server CPU milliseconds spent during the window, or null when /proc is not there. */
  cpuMs: number | null;
}

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux); null elsewhere. */
function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    // USER_HZ is 100 on Linux.
    return Number.isFinite(ticks) ? ticks * 10 : null;
  } catch {
    return null;
  }
}

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
  /** The server's process id, to report its CPU time per request. */
  pid?: number;
}): Promise<LoadFigures> {
  return summarize([await loadSlice(options)], options.durationMs);
}

function summarize(slices: Slice[], durationMs: number): LoadFigures {
  const completed = slices.reduce((sum, slice) => sum + slice.completed, 0);
  const latencies = slices.flatMap((slice) => slice.latencies).sort((a, b) => a - b);
  const at = (q: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 100) / 100;
  const cpuMs = slices.every((slice) => slice.cpuMs !== null) ? slices.reduce((sum, slice) => sum + (slice.cpuMs as number), 0) : null;
  const answered = slices.reduce((sum, slice) => sum + slice.answeredInWindow, 0);
  return {
    requests: completed,
    rps: Math.round(completed / (durationMs / 1000)),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    serverCpuUsPerRequest: cpuMs === null || answered === 0 ? null : Math.round((cpuMs * 10_000) / answered) / 10,
    sliceRps: slices.map((slice) => Math.round(slice.completed / (durationMs / 1000 / slices.length))),
  };
}

async function loadSlice(options: {
  port: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
  request: () => string;
  expectStatus: number;
  pid?: number;
}): Promise<Slice> {
  const start = performance.now();
  const measureFrom = start + options.warmupMs;
  const end = measureFrom + options.durationMs;
  const latencies: number[] = [];
  let completed = 0;
  let failure: Error | null = null;
  let answeredInWindow = 0;
  // Read when the window opens and closes (by timers; a timer that a busy loop delays past the last answer is read
  // at the end instead).
  let cpuAtStart: number | null = options.warmupMs === 0 ? processCpuMs(options.pid) : null;
  let cpuAtEnd: number | null = null;
  const cpuTimers = [
    setTimeout(() => {
      cpuAtStart ??= processCpuMs(options.pid);
    }, options.warmupMs),
    setTimeout(() => {
      cpuAtEnd = processCpuMs(options.pid);
    }, options.warmupMs + options.durationMs),
  ];

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
          if (now >= measureFrom && now <= end) answeredInWindow++;
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
  for (const timer of cpuTimers) clearTimeout(timer);
  cpuAtEnd ??= processCpuMs(options.pid);
  if (failure) throw failure;
  return { completed, latencies, answeredInWindow, cpuMs: cpuAtStart === null || cpuAtEnd === null ? null : cpuAtEnd - cpuAtStart };
}

interface Target {
  name: string;
  port: number;
  pid: number;
  request: () => string;
  expectStatus: number;
}

// ---------------------------------------------------------------------------------------------------------------

/** Slices of one second (or less), alternating between the sides, after a warm-up of each; one figure per side. */
async function measureSides(
  sides: Target[],
  options: { connections: number; warmupMs: number; durationS: number },
  log: (line: string) => void,
): Promise<LoadFigures[]> {
  for (const side of sides) await loadSlice({ ...side, connections: options.connections, warmupMs: options.warmupMs, durationMs: 0 });
  const slices = sides.map(() => [] as Slice[]);
  for (let i = 0; i < options.durationS; i++) {
    // A-B, then B-A: neither side always runs right after the other's heavier moment.
    const order = sides.map((_, k) => k);
    if (i % 2 === 1) order.reverse();
    for (const k of order) {
      const side = sides[k] as Target;
      (slices[k] as Slice[]).push(await loadSlice({ ...side, connections: options.connections, warmupMs: 0, durationMs: 1000 }));
    }
  }
  return sides.map((side, k) => {
    const figures = summarize(slices[k] as Slice[], options.durationS * 1000);
    log(
      `http: ${side.name}: ${figures.rps} req/s (p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, server CPU ${figures.serverCpuUsPerRequest ?? '?'} us/request)`,
    );
    return figures;
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

/**
 * One side's figures over several server processes measured in turn: the slices of all of them, in order (so that
 * pairedRatio pairs each slice with the other side's slice next to it), the total requests, the mean rate, and the
 * median of each process's latencies and CPU per request.
 */
function pooled(samples: LoadFigures[]): LoadFigures {
  if (samples.length === 1) return samples[0] as LoadFigures;
  const cpu = samples.map((sample) => sample.serverCpuUsPerRequest);
  return {
    requests: samples.reduce((sum, sample) => sum + sample.requests, 0),
    rps: Math.round(samples.reduce((sum, sample) => sum + sample.rps, 0) / samples.length),
    p50Ms: median(samples.map((sample) => sample.p50Ms)),
    p99Ms: median(samples.map((sample) => sample.p99Ms)),
    serverCpuUsPerRequest: cpu.every((value) => value !== null) ? median(cpu as number[]) : null,
    sliceRps: samples.flatMap((sample) => sample.sliceRps),
  };
}

/**
 * The median over i of a.sliceRps[i] / b.sliceRps[i]: slice i of each side ran next to the other's (A-B, then B-A),
 * so each pair shares the machine's state of that moment.
 */
export function pairedRatio(a: LoadFigures, b: LoadFigures): number {
  const ratios = a.sliceRps.map((rps, i) => rps / Math.max(1, b.sliceRps[i] ?? 0));
  if (ratios.length === 0) return 0;
  return Math.round(median(ratios) * 1000) / 1000;
}

export async function run(options: HttpBenchOptions = {}): Promise<HttpFigures> {
  const durationS = Math.max(1, Math.min(Math.round(options.durationS ?? 9), 120));
  const warmupS = Math.max(0, Math.min(options.warmupS ?? 1, 60));
  const connections = Math.max(1, Math.min(options.connections ?? 32, 1024));
  const rawLoopCount = Math.max(100, Math.min(options.rawLoopCount ?? 2000, 100_000));
  const processes = Math.max(1, Math.min(Math.round(options.processes ?? 3), 8));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));

  const loadAvgBefore = loadavg()[0] as number;
  // The raw store loop (the same transfers, no HTTP) before the servers start and again after the POSTs, while no
  // server is busy: an fsync's cost moves with whatever else uses the disk, and the faster run is the one compared.
  const { run: runLedgerLoop } = await import('./ledger-transfer.bench.js');
  const rawLoop = async () => {
    const figures = await runLedgerLoop({ count: rawLoopCount, synchronous: 'FULL' });
    log(`http: raw store loop (ledger-transfer.bench, FULL): ${figures.transfersPerSecond} transfers/s`);
    return figures.transfersPerSecond;
  };
  const rawLoopBefore = await rawLoop();

  const kinds: ChildKind[] = [
    'bare',
    'contract-floor',
    'control-plane',
    'control-plane-normal',
    'control-plane-info',
    'control-plane-uncollected',
    'control-plane-ticks-unkept',
    // The budgeted account pair's other processes (one process is one sample).
    ...Array.from({ length: processes - 1 }, () => ['bare', 'control-plane'] as const).flat(),
  ];
  const started = await Promise.allSettled(kinds.map(startChild));
  const children = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await Promise.all(children.map((child) => child.stop()));
    throw failed.reason;
  }
  const [bare, floor, cp, cpNormal, cpInfo, cpUncollected, cpTicksUnkept, ...others] = children as [
    Child,
    Child,
    Child,
    Child,
    Child,
    Child,
    Child,
    ...Child[],
  ];
  const accountPairs: Array<[Child, Child]> = [[bare, cp]];
  for (let i = 0; i + 1 < others.length; i += 2) accountPairs.push([others[i] as Child, others[i + 1] as Child]);
  try {
    const common = { connections, warmupMs: warmupS * 1000, durationS };
    const getAccount = (child: Child) => () =>
      `GET /api/v1/account HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${child.info.apiKey}\r\n\r\n`;
    const getBare = 'GET /account HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const post = (child: Child, path: string) => () =>
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${child.info.apiKey}\r\nIdempotency-Key: ${randomUUID()}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
    const target = (name: string, child: Child, request: () => string, expectStatus: number): Target => ({
      name,
      port: child.info.port,
      pid: child.pid,
      request,
      expectStatus,
    });

    // The budgeted pair, once per pair of processes.
    const accountSamples: Array<[LoadFigures, LoadFigures]> = [];
    for (const [i, [bareProcess, cpProcess]] of accountPairs.entries()) {
      const which = accountPairs.length > 1 ? ` (process ${i + 1} of ${accountPairs.length})` : '';
      accountSamples.push(
        (await measureSides(
          [
            target(`bare Fastify GET /account${which}`, bareProcess, () => getBare, 200),
            target(`control plane GET /api/v1/account (API key)${which}`, cpProcess, getAccount(cpProcess), 200),
          ],
          common,
          log,
        )) as [LoadFigures, LoadFigures],
      );
    }
    const bareFastify = pooled(accountSamples.map(([bareSide]) => bareSide));
    const accountWithApiKey = pooled(accountSamples.map(([, cpSide]) => cpSide));
    // The contract's floor, paired with bare Fastify on its own (the budgeted pair above stays a pair).
    const [bareForFloor, contractFloor] = (await measureSides(
      [
        target('bare Fastify GET /account (beside the floor)', bare, () => getBare, 200),
        target('contract floor GET /api/v1/account', floor, getAccount(floor), 200),
      ],
      common,
      log,
    )) as [LoadFigures, LoadFigures];
    const [accountWithInfoLogging, accountWithoutStartupCollection, accountWithoutTickMaps] = (await measureSides(
      [
        target('control plane GET /api/v1/account, request logging at info', cpInfo, getAccount(cpInfo), 200),
        target('control plane GET /api/v1/account, no collection after startup', cpUncollected, getAccount(cpUncollected), 200),
        target('control plane GET /api/v1/account, tick-object maps not kept', cpTicksUnkept, getAccount(cpTicksUnkept), 200),
      ],
      common,
      log,
    )) as [LoadFigures, LoadFigures, LoadFigures];
    const [plainPost, idempotentPost] = (await measureSides(
      [
        target('POST ledger transfer (FULL)', cp, post(cp, BENCH_ROUTE_PLAIN), 201),
        target('POST ledger transfer, idempotent (FULL)', cp, post(cp, BENCH_ROUTE_IDEMPOTENT), 201),
      ],
      common,
      log,
    )) as [LoadFigures, LoadFigures];
    const [plainPostNormal, idempotentPostNormal] = (await measureSides(
      [
        target('POST ledger transfer (NORMAL)', cpNormal, post(cpNormal, BENCH_ROUTE_PLAIN), 201),
        target('POST ledger transfer, idempotent (NORMAL)', cpNormal, post(cpNormal, BENCH_ROUTE_IDEMPOTENT), 201),
      ],
      common,
      log,
    )) as [LoadFigures, LoadFigures];

    const rawLoopAfter = await rawLoop();
    const rawLoopPerSecond = Math.max(rawLoopBefore, rawLoopAfter);
    const ratio = (a: number, b: number) => Math.round((a / Math.max(1, b)) * 1000) / 1000;
    const accountRatio = pairedRatio(accountWithApiKey, bareFastify);
    const idempotentRatio = pairedRatio(idempotentPost, plainPost);
    const ledgerTransfer = {
      httpPerSecond: plainPost.rps,
      rawLoopPerSecond,
      rawLoopRuns: [rawLoopBefore, rawLoopAfter],
      ratio: ratio(plainPost.rps, rawLoopPerSecond),
    };
    const budgets = { accountRatioMin: 0.6, idempotentRatioMin: 0.8, ledgerHttpPerSecondMin: 1000, ledgerHttpRatioMin: 0.25 };
    const cpuOf = (figures: LoadFigures) => figures.serverCpuUsPerRequest;
    const bareCpu = cpuOf(bareFastify);
    const accountCpu = cpuOf(accountWithApiKey);
    return {
      connections,
      durationS,
      loadAvgBefore: Math.round(loadAvgBefore * 100) / 100,
      loadAvgAfter: Math.round((loadavg()[0] as number) * 100) / 100,
      cpus: cpus().length,
      bareFastify,
      accountWithApiKey,
      accountRatio,
      accountRatioOfTotals: ratio(accountWithApiKey.rps, bareFastify.rps),
      processes: accountPairs.length,
      accountRatioByProcess: accountSamples.map(([bareSide, cpSide]) => pairedRatio(cpSide, bareSide)),
      accountCpuUsByProcess: accountSamples.map(([, cpSide]) => cpSide.serverCpuUsPerRequest),
      accountCpuRatio: bareCpu === null || accountCpu === null ? null : ratio(bareCpu, accountCpu),
      contractFloor,
      contractFloorRatio: pairedRatio(contractFloor, bareForFloor),
      accountWithInfoLogging,
      accountWithoutStartupCollection,
      accountWithoutTickMaps,
      plainPost,
      idempotentPost,
      idempotentRatio,
      idempotentRatioOfTotals: ratio(idempotentPost.rps, plainPost.rps),
      plainPostNormal,
      idempotentPostNormal,
      idempotentRatioNormal: pairedRatio(idempotentPostNormal, plainPostNormal),
      ledgerTransfer,
      budgets,
      withinBudget: {
        account: accountRatio >= budgets.accountRatioMin,
        idempotent: idempotentRatio >= budgets.idempotentRatioMin,
        ledgerTransferOverHttp:
          ledgerTransfer.httpPerSecond >= budgets.ledgerHttpPerSecondMin && ledgerTransfer.ratio >= budgets.ledgerHttpRatioMin,
      },
    };
  } finally {
    await Promise.all(children.map((child) => child.stop()));
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      serve: { type: 'string' },
      'duration-s': { type: 'string' },
      'warmup-s': { type: 'string' },
      connections: { type: 'string' },
      'raw-loop-count': { type: 'string' },
      processes: { type: 'string' },
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
      rawLoopCount: num(values['raw-loop-count']),
      processes: num(values.processes),
    });
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  }
}
