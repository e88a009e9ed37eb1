// Idempotency across a crash (issue 7), on each store: bursts of concurrent idempotent requests (API keys, withdrawal
// addresses, budget extensions of a running job), `kill -9` of `ark-cp serve` 20-40 ms into each burst, a restart on
// the same data, and every request replayed with its key and body. A replay answers at once; no effect happens twice;
// an answer that left before the kill is replayed byte for byte; a request cut off by the kill is answered as its
// effect says (it happened: the created resource; it did not: created now, once); a second replay repeats the first.
// Effects are counted only through the public API, and the ledger is verified with `ark-cp ledger verify`.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDockerAvailable } from '../harness/dockerd.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { waitFor } from '../harness/processes.js';
import { type ControlPlane, controlPlaneCli, startControlPlane } from './host-side-helpers.js';
import { DIALECTS, type Dialect, type DockerWorld, RentalSite, startDockerWorld } from './rental-helpers.js';

/** Bursts per store, each cut by a kill -9. CI runs 4; `pnpm bench crash` runs 10 (ARK_CRASH_TRIALS). */
const TRIALS = Number(process.env.ARK_CRASH_TRIALS ?? 4);
const BURST_SIZE = 30;
/** Two extensions carrying the same expected versions: only one of them can apply. */
const EXTENSIONS_PER_BURST = 2;
// The kill lands 20-40 ms into the burst where the burst's median answer comes within 30 ms. On a slower (or busier)
// machine the window is stretched by the same factor, so the kill still lands among the commits, not before them.
const KILL_AFTER_MS_MIN = 20;
const KILL_AFTER_MS_MAX = 40;
const KILL_REFERENCE_MEDIAN_MS = 30;
/** A replay after the restart must come back well within this (the Postgres defect waited ~40 s on a dead claim). */
const REPLAY_LATENCY_MS_MAX = 5_000;
/** Bound on any one HTTP exchange, so a hung request fails the trial instead of the whole run. */
const REQUEST_TIMEOUT_MS = 15_000;
const PAGE_LIMIT = 100;
const PASSWORD = 'correct horse battery staple';

const docker = isDockerAvailable();

interface Answer {
  status: number;
  text: string;
  /** Time from sending to the end of the body. */
  ms: number;
}

type RequestKind = 'api-key' | 'address' | 'extension';

interface BurstRequest {
  kind: RequestKind;
  path: string;
  body: Record<string, unknown>;
  idempotencyKey: string;
  /** What identifies its effect: the key's label, the address, or the extension's amount in micro-USDC. */
  tag: string;
}

/**
 * One HTTP exchange on its own connection (no keep-alive pool), so nothing of a killed server's sockets is reused
 * after the restart. Rejects when the connection ends before the whole answer arrived.
 */
function exchange(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; idempotencyKey?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (payload !== undefined) headers['content-type'] = 'application/json';
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const req = httpRequest(
      `${base}${path}`,
      { method, headers, agent: false, timeout: options.timeoutMs ?? REQUEST_TIMEOUT_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('close', () => {
          if (!res.complete) {
            reject(new Error(`${method} ${path}: the connection closed before the whole answer arrived`));
            return;
          }
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${options.timeoutMs ?? REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

function json(answer: Answer): any {
  return answer.text === '' ? null : JSON.parse(answer.text);
}

/** The error code of an error answer, or null. */
function errorCode(answer: Answer): string | null {
  try {
    return json(answer)?.error?.code ?? null;
  } catch {
    return null;
  }
}

/** An answer the server does not keep for the key (a retryable failure): a replay may rightly answer otherwise. */
function isRetryable(answer: Answer): boolean {
  if (answer.status >= 500) return true;
  try {
    return json(answer)?.error?.retryable === true;
  } catch {
    return false;
  }
}

function describeAnswer(answer: Answer | null | undefined): string {
  if (answer === null || answer === undefined) return '(no answer)';
  return `${answer.status} ${answer.text.slice(0, 300)}`;
}

/** A control plane on one store: either a whole rental site (Docker) or `ark-cp serve` alone. */
interface Deployment {
  readonly cp: ControlPlane;
  /** Starts `ark-cp serve` again on the same port, data dir and store (after a kill). */
  startAgain(): Promise<void>;
  cli(args: string[]): Promise<any>;
  logs(): string;
  stop(): Promise<void>;
}

// The renter's session must stay stepped up across every trial; its jobs must not be moved to RECONCILING while the
// control plane is down for a restart (that bumps job_version, and the extensions need a steady job).
const CONTROL_PLANE_ENV: NodeJS.ProcessEnv = { ARK_STEP_UP_TTL_S: '3600', ARK_JOB_AGENT_GRACE_S: '600' };

function siteDeployment(site: RentalSite): Deployment {
  return {
    get cp() {
      return site.cp;
    },
    startAgain: () => site.startControlPlaneAgain(),
    cli: (args) => site.cli(args),
    logs: () => site.logs(),
    stop: () => site.stop(),
  };
}

async function bareDeployment(dialect: Dialect): Promise<Deployment> {
  const database: TestDatabase | undefined = dialect === 'postgres' ? await createTestDatabase() : undefined;
  const dataDir = mkdtempSync(join(tmpdir(), 'ark-e2e-idem-'));
  const databaseUrl = database?.url ?? null;
  let cp: ControlPlane | undefined;
  const deployment: Deployment = {
    get cp() {
      if (cp === undefined) throw new Error('the control plane is not started');
      return cp;
    },
    startAgain: async () => {
      cp = await startControlPlane({ port: deployment.cp.port, dataDir, databaseUrl, env: CONTROL_PLANE_ENV });
    },
    cli: async (args) => JSON.parse(await controlPlaneCli(deployment.cp, args)),
    logs: () => `--- control plane ---\n${cp?.process.output().slice(-6000) ?? ''}`,
    stop: async () => {
      await cp?.process.stop('SIGTERM').catch(() => undefined);
      await database?.drop().catch(() => undefined);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  try {
    cp = await startControlPlane({ dataDir, databaseUrl, env: CONTROL_PLANE_ENV });
  } catch (error) {
    await deployment.stop();
    throw error;
  }
  return deployment;
}

interface Renter {
  email: string;
  session: string;
}

/** A verified, funded renter made with `ark-cp`, signed in over HTTP, its session stepped up with the password. */
async function renterWithStepUp(deployment: Deployment): Promise<Renter> {
  const email = `renter-${randomUUID().slice(0, 8)}@example.test`;
  await deployment.cli(['accounts', 'create', '--email', email, '--role', 'renter', '--password', PASSWORD, '--verified']);
  await deployment.cli(['ledger', 'credit', '--email', email, '--amount-micro', '1000000000', '--reason', 'e2e']);
  const signIn = await exchange(deployment.cp.base, 'POST', '/api/v1/auth/sessions', { body: { email, password: PASSWORD } });
  if (signIn.status !== 201) throw new Error(`sign-in: ${describeAnswer(signIn)}`);
  const session = json(signIn).session_token as string;
  const stepUp = await exchange(deployment.cp.base, 'POST', '/api/v1/account/step-up', { token: session, body: { password: PASSWORD } });
  if (stepUp.status !== 200) throw new Error(`step-up: ${describeAnswer(stepUp)}`);
  return { email, session };
}

/** Quote and reserve the site's machine as `renter`, then wait for RUNNING; answers the job id. */
async function runningJob(site: RentalSite, renter: Renter): Promise<string> {
  const base = site.cp.base;
  const quoted = await exchange(base, 'POST', '/api/v1/quotes', {
    token: renter.session,
    idempotencyKey: randomUUID(),
    body: {
      offer_id: site.offerId,
      gpu_count: 1,
      duration_limit_s: 1800,
      budget_micro: '20000000',
      image_digest: site.world.image.digestRef,
    },
  });
  if (quoted.status !== 201) throw new Error(`quote: ${describeAnswer(quoted)}`);
  const reserved = await exchange(base, 'POST', '/api/v1/jobs', {
    token: renter.session,
    idempotencyKey: randomUUID(),
    body: { quote_id: json(quoted).quote_id, ssh_public_keys: [site.ssh.publicKey] },
  });
  if (reserved.status !== 202) throw new Error(`reserve: ${describeAnswer(reserved)}`);
  const jobId = json(reserved).job_id as string;
  await waitFor(
    async () => {
      const job = await readJob(base, renter, jobId);
      if (job.state === 'FAILED') throw new Error(`job ${jobId} FAILED: ${JSON.stringify(job)}`);
      return job.state === 'RUNNING';
    },
    { timeoutMs: 60_000, intervalMs: 100, description: `job ${jobId} RUNNING` },
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${site.logs()}`);
  });
  return jobId;
}

async function readJob(base: string, renter: Renter, jobId: string): Promise<any> {
  const answer = await exchange(base, 'GET', `/api/v1/jobs/${jobId}`, { token: renter.session });
  if (answer.status !== 200) throw new Error(`job: ${describeAnswer(answer)}`);
  return json(answer);
}

/** Every item of a cursor-paged list. */
async function listAll(base: string, renter: Renter, path: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `limit=${PAGE_LIMIT}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const answer = await exchange(base, 'GET', `${path}${path.includes('?') ? '&' : '?'}${query}`, { token: renter.session });
    if (answer.status !== 200) throw new Error(`${path}: ${describeAnswer(answer)}`);
    const page = json(answer);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return items;
}

/** What the public API shows of the burst's effects. */
interface Effects {
  /** API key ids by label. */
  keys: Map<string, string[]>;
  /** Withdrawal address ids by address. */
  addresses: Map<string, string[]>;
  /** The job (null without one), and its budget_extended events past the trial's starting budget version. */
  job: { budgetVersion: bigint; fundedMicro: bigint; extensions: Array<Record<string, any>> } | null;
}

function groupBy(items: any[], key: string, value: string): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const item of items) {
    const list = groups.get(item[key]) ?? [];
    list.push(item[value]);
    groups.set(item[key], list);
  }
  return groups;
}

async function readEffects(base: string, renter: Renter, jobId: string | null, fromBudgetVersion: bigint): Promise<Effects> {
  const [keys, addresses, job, events] = await Promise.all([
    listAll(base, renter, '/api/v1/account/api-keys'),
    listAll(base, renter, '/api/v1/withdrawal-addresses'),
    jobId === null ? null : readJob(base, renter, jobId),
    jobId === null ? [] : listAll(base, renter, `/api/v1/jobs/${jobId}/events`),
  ]);
  return {
    keys: groupBy(keys, 'label', 'api_key_id'),
    addresses: groupBy(addresses, 'address', 'id'),
    job:
      job === null
        ? null
        : {
            budgetVersion: BigInt(job.budget_version),
            fundedMicro: BigInt(job.funded_budget_micro),
            extensions: events
              .filter((event) => event.kind === 'budget_extended' && BigInt(event.data.budget_version) > fromBudgetVersion)
              .map((event) => event.data),
          },
  };
}

interface StoreTally {
  trials: number;
  requests: number;
  /** Requests with no answer (or only a retryable one) when the control plane was killed. */
  killedInFlight: number;
  /** Of those, the ones whose effect had committed anyway (the case the fix is about). */
  effectWithoutAnswer: number;
  killAtMs: number[];
  replayMsMax: number;
  /** Failures, each a sentence naming the trial and the request. */
  doubleEffects: string[];
  changedAnswers: string[];
  slowOrBusyReplays: string[];
  unstableReplays: string[];
}

function newTally(): StoreTally {
  return {
    trials: 0,
    requests: 0,
    killedInFlight: 0,
    effectWithoutAnswer: 0,
    killAtMs: [],
    replayMsMax: 0,
    doubleEffects: [],
    changedAnswers: [],
    slowOrBusyReplays: [],
    unstableReplays: [],
  };
}

function burstRequests(name: string, job: { id: string; body: any } | null): BurstRequest[] {
  const extensions = job === null ? 0 : EXTENSIONS_PER_BURST;
  const keys = Math.ceil((BURST_SIZE - extensions) / 2);
  const addresses = BURST_SIZE - extensions - keys;
  const nonce = randomBytes(3).toString('hex');
  const requests: BurstRequest[] = [];
  for (let i = 0; i < keys; i++) {
    const label = `${name}-${nonce}-key-${i}`;
    requests.push({
      kind: 'api-key',
      path: '/api/v1/account/api-keys',
      body: { label, scopes: ['renter'] },
      idempotencyKey: randomUUID(),
      tag: label,
    });
  }
  for (let i = 0; i < addresses; i++) {
    const address = `0x${randomBytes(20).toString('hex')}`;
    requests.push({
      kind: 'address',
      path: '/api/v1/withdrawal-addresses',
      body: { address, label: `${name}-${nonce}-address-${i}` },
      idempotencyKey: randomUUID(),
      tag: address,
    });
  }
  for (let i = 0; i < extensions && job !== null; i++) {
    const amount = (1_000 + Math.floor(Math.random() * 1_000) * EXTENSIONS_PER_BURST + i).toString();
    requests.push({
      kind: 'extension',
      path: `/api/v1/jobs/${job.id}/budget-extension`,
      body: {
        additional_budget_micro: amount,
        new_duration_limit_s: job.body.duration_limit_s,
        expected_job_version: job.body.job_version,
        expected_budget_version: job.body.budget_version,
      },
      idempotencyKey: randomUUID(),
      tag: amount,
    });
  }
  // Interleaved, so the kill lands among every kind.
  return requests.sort(() => Math.random() - 0.5);
}

async function replay(base: string, renter: Renter, requests: readonly BurstRequest[]): Promise<Array<Answer | Error>> {
  return Promise.all(
    requests.map((r) =>
      exchange(base, 'POST', r.path, { token: renter.session, body: r.body, idempotencyKey: r.idempotencyKey }).catch(
        (error: Error) => error,
      ),
    ),
  );
}

/**
 * The median answer time of a burst like the trial's (keys and addresses; not killed) on the server as it is now: other
 * processes on the machine can slow it many times over between trials.
 */
async function calibrate(base: string, renter: Renter, n: number): Promise<number> {
  const requests = burstRequests(`warm-${n}`, null);
  const answers = await replay(base, renter, requests);
  const times: number[] = [];
  for (const answer of answers) {
    if (answer instanceof Error || answer.status !== 201)
      throw new Error(`trial ${n}: a calibration request got ${describeAnswer(answer as Answer)}`);
    times.push(answer.ms);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** One trial: burst, kill -9 in the middle of it, restart, replay twice, and every check into the tally. */
async function trial(n: number, deployment: Deployment, renter: Renter, jobId: string | null, tally: StoreTally): Promise<void> {
  const before = jobId === null ? null : await readJob(deployment.cp.base, renter, jobId);
  const startVersion = before === null ? 0n : BigInt(before.budget_version);
  const startFunded = before === null ? 0n : BigInt(before.funded_budget_micro);
  const requests = burstRequests(`crash-${n}`, jobId === null ? null : { id: jobId, body: before });
  const where = (i: number) => `trial ${n}, ${requests[i]!.kind} ${requests[i]!.tag}`;

  // The burst, over real HTTP, and the kill by PID at a random moment inside it.
  const { base } = deployment.cp;
  const stretch = Math.max(1, (await calibrate(base, renter, n)) / KILL_REFERENCE_MEDIAN_MS);
  const killAfterMs = (KILL_AFTER_MS_MIN + Math.random() * (KILL_AFTER_MS_MAX - KILL_AFTER_MS_MIN)) * stretch;
  const burstStarted = performance.now();
  const inFlight = requests.map((r) =>
    exchange(base, 'POST', r.path, { token: renter.session, body: r.body, idempotencyKey: r.idempotencyKey }).catch(() => null),
  );
  await new Promise((resolve) => setTimeout(resolve, killAfterMs));
  const killed = deployment.cp.process.stop('SIGKILL');
  tally.killAtMs.push(performance.now() - burstStarted);
  const exit = await killed;
  expect(exit.signal, `trial ${n}: the control plane died of the kill`).toBe('SIGKILL');
  const original = await Promise.all(inFlight);
  // A retryable answer is not kept for its key: for the checks it is as good as none.
  const answered = original.map((answer) => (answer !== null && !isRetryable(answer) ? answer : null));

  const phases: Record<string, number> = { burst: performance.now() - burstStarted };
  const phase = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    const phaseStarted = performance.now();
    const result = await work();
    phases[name] = performance.now() - phaseStarted;
    return result;
  };
  await phase('restart', () => deployment.startAgain());
  const committed = await phase('effects', () => readEffects(deployment.cp.base, renter, jobId, startVersion));
  const first = await phase('replay', () => replay(deployment.cp.base, renter, requests));
  const afterFirst = await readEffects(deployment.cp.base, renter, jobId, startVersion);
  const second = await phase('replay2', () => replay(deployment.cp.base, renter, requests));
  const afterSecond = await readEffects(deployment.cp.base, renter, jobId, startVersion);
  if (process.env.ARK_TEST_DEBUG) {
    const arrivals = original.flatMap((answer) => (answer === null ? [] : [Math.round(answer.ms)]));
    console.info(
      `trial ${n}: killed at ${Math.round(tally.killAtMs.at(-1) ?? 0)} ms, answers before the kill at ${JSON.stringify(arrivals)} ms, ` +
        `phases (ms) ${JSON.stringify(Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, Math.round(v)])))}`,
    );
  }

  tally.trials += 1;
  tally.requests += requests.length;

  // (a) Every replay answers at once, and never "in progress": nothing the dead process held survives it.
  for (const [i, answer] of first.entries()) {
    if (answer instanceof Error) {
      tally.slowOrBusyReplays.push(`${where(i)}: the replay failed: ${answer.message}`);
      continue;
    }
    tally.replayMsMax = Math.max(tally.replayMsMax, answer.ms);
    if (answer.ms > REPLAY_LATENCY_MS_MAX) tally.slowOrBusyReplays.push(`${where(i)}: the replay took ${Math.round(answer.ms)} ms`);
    if (isRetryable(answer) || errorCode(answer) === 'IDEMPOTENCY_IN_PROGRESS') {
      tally.slowOrBusyReplays.push(`${where(i)}: the replay answered ${describeAnswer(answer)}`);
    }
  }

  // (d) A second replay repeats the first, byte for byte, and adds no effect.
  for (const [i, answer] of second.entries()) {
    const firstAnswer = first[i];
    if (answer instanceof Error || firstAnswer instanceof Error) {
      if (answer instanceof Error) tally.unstableReplays.push(`${where(i)}: the second replay failed: ${answer.message}`);
      continue;
    }
    if (answer.status !== firstAnswer!.status || answer.text !== firstAnswer!.text) {
      tally.unstableReplays.push(`${where(i)}: first replay ${describeAnswer(firstAnswer)}, second ${describeAnswer(answer)}`);
    }
  }

  for (const [i, request] of requests.entries()) {
    const answer = answered[i] ?? null;
    const replayed = first[i] instanceof Error ? null : (first[i] as Answer);
    if (answer === null) tally.killedInFlight += 1;

    // (c) An answer that left before the kill comes back byte for byte.
    if (answer !== null && replayed !== null && (answer.status !== replayed.status || answer.text !== replayed.text)) {
      tally.changedAnswers.push(`${where(i)}: answered ${describeAnswer(answer)} before the kill, ${describeAnswer(replayed)} on replay`);
    }
    if (request.kind === 'extension') continue;

    // (b) At most one effect per request, and (c) the replay's answer names it.
    const groups = request.kind === 'api-key' ? 'keys' : 'addresses';
    const idField = request.kind === 'api-key' ? 'api_key_id' : 'id';
    const atRestart = committed[groups].get(request.tag) ?? [];
    const afterReplay = afterFirst[groups].get(request.tag) ?? [];
    const afterSecondReplay = afterSecond[groups].get(request.tag) ?? [];
    if (answer === null && atRestart.length > 0) tally.effectWithoutAnswer += 1;
    if (atRestart.length > 1 || afterReplay.length > 1 || afterSecondReplay.length > 1) {
      tally.doubleEffects.push(`${where(i)}: ${Math.max(atRestart.length, afterReplay.length, afterSecondReplay.length)} created`);
    }
    if (replayed === null) continue;
    if (replayed.status !== 201) {
      const state = atRestart.length > 0 ? 'it existed at the restart' : 'it did not exist at the restart';
      tally.changedAnswers.push(`${where(i)}: ${state}, yet the replay answered ${describeAnswer(replayed)}`);
      continue;
    }
    const createdId = json(replayed)[idField];
    if (afterReplay.length !== 1 || afterReplay[0] !== createdId) {
      tally.changedAnswers.push(`${where(i)}: the replay answered ${createdId}, the API lists ${JSON.stringify(afterReplay)}`);
    }
    if (atRestart.length === 1 && atRestart[0] !== createdId) {
      tally.changedAnswers.push(`${where(i)}: ${atRestart[0]} existed at the restart, the replay answered ${createdId}`);
    }
  }

  // The budget extensions: one compare-and-set, so at most one applies; the answers agree with the job.
  if (jobId !== null) {
    const extensionIndexes = requests.flatMap((r, i) => (r.kind === 'extension' ? [i] : []));
    const appliedAtRestart = committed.job!.budgetVersion - startVersion;
    const applied = afterFirst.job!.budgetVersion - startVersion;
    const answeredBeforeKill = extensionIndexes.filter((i) => answered[i]?.status === 202).length;
    if (appliedAtRestart > BigInt(answeredBeforeKill)) tally.effectWithoutAnswer += Number(appliedAtRestart) - answeredBeforeKill;
    if (applied > 1n || afterSecond.job!.budgetVersion !== afterFirst.job!.budgetVersion) {
      tally.doubleEffects.push(
        `trial ${n}: budget_version went ${startVersion} -> ${afterFirst.job!.budgetVersion} -> ${afterSecond.job!.budgetVersion} for one compare-and-set`,
      );
    }
    if (BigInt(afterFirst.job!.extensions.length) !== applied || BigInt(afterSecond.job!.extensions.length) !== applied) {
      tally.doubleEffects.push(
        `trial ${n}: ${afterSecond.job!.extensions.length} budget_extended events for ${applied} budget version step(s)`,
      );
    }
    const accepted = extensionIndexes.filter((i) => !(first[i] instanceof Error) && (first[i] as Answer).status === 202);
    if (BigInt(accepted.length) !== applied) {
      tally.changedAnswers.push(
        `trial ${n}: budget_version advanced by ${applied} (${appliedAtRestart} at the restart) but ${accepted.length} replay(s) answered 202: ` +
          extensionIndexes.map((i) => `${requests[i]!.tag}: ${describeAnswer(first[i] as Answer)}`).join('; '),
      );
    }
    for (const i of accepted) {
      const body = json(first[i] as Answer);
      const amount = BigInt(requests[i]!.tag);
      const event = afterFirst.job!.extensions.find((data) => data.additional_budget_micro === requests[i]!.tag);
      if (
        body.budget_version !== (startVersion + 1n).toString() ||
        BigInt(body.funded_budget_micro) !== startFunded + amount ||
        afterFirst.job!.fundedMicro !== startFunded + amount ||
        event === undefined
      ) {
        tally.changedAnswers.push(
          `${where(i)}: replay answered ${describeAnswer(first[i] as Answer)}; the job funds ${afterFirst.job!.fundedMicro} (from ${startFunded}), ` +
            `events ${JSON.stringify(afterFirst.job!.extensions)}`,
        );
      }
    }
    for (const i of extensionIndexes) {
      const answer = first[i]!;
      if (answer instanceof Error || answer.status === 202) continue;
      const code = errorCode(answer);
      if (answer.status !== 409 || (code !== 'JOB_VERSION_MISMATCH' && code !== 'BUDGET_VERSION_MISMATCH')) {
        tally.changedAnswers.push(`${where(i)}: the extension that did not apply answered ${describeAnswer(answer)}`);
      }
    }
  }
}

describe('idempotent requests across kill -9 of the control plane', () => {
  let world: DockerWorld | undefined;

  beforeAll(async () => {
    if (docker) world = await startDockerWorld();
  }, 180_000);

  afterAll(async () => {
    await world?.stop();
  }, 60_000);

  describe.each(DIALECTS)('on %s', (dialect) => {
    let deployment: Deployment | undefined;
    let renter: Renter;
    let jobId: string | null = null;

    beforeAll(async () => {
      if (world !== undefined) {
        const site = await RentalSite.start(dialect, world, { cpEnv: CONTROL_PLANE_ENV });
        deployment = siteDeployment(site);
        renter = await renterWithStepUp(deployment);
        jobId = await runningJob(site, renter);
      } else {
        deployment = await bareDeployment(dialect);
        renter = await renterWithStepUp(deployment);
      }
    }, 180_000);

    afterAll(async () => {
      await deployment?.stop();
    }, 60_000);

    it(`${TRIALS} bursts of ${BURST_SIZE}, each cut by SIGKILL: replays answer at once, no double effect, no changed answer`, {
      // About 6-8 s a trial on an idle 2-core machine; the bound leaves room for a busy one.
      timeout: 480_000,
    }, async () => {
      if (jobId === null) {
        console.warn(`idempotency crash on ${dialect}: budget extensions skipped, Docker is unavailable (no job to extend)`);
      }
      const tally = newTally();
      const started = Date.now();
      for (let n = 1; n <= TRIALS; n++) {
        try {
          await trial(n, deployment!, renter, jobId, tally);
        } catch (error) {
          throw new Error(`trial ${n}: ${(error as Error).message}\n${deployment!.logs()}`);
        }
      }
      const ledger = await deployment!.cli(['ledger', 'verify']);
      const kills = tally.killAtMs.map(Math.round);
      console.info(
        `idempotency crash on ${dialect}: ${tally.trials} trials, ${tally.requests} requests, ${tally.killedInFlight} killed in flight ` +
          `(${tally.effectWithoutAnswer} of them committed before the kill), double effects ${tally.doubleEffects.length}, ` +
          `changed answers ${tally.changedAnswers.length}, slow or busy replays ${tally.slowOrBusyReplays.length}, ` +
          `unstable replays ${tally.unstableReplays.length}, replay max ${Math.round(tally.replayMsMax)} ms, ` +
          `kill at ${Math.min(...kills)}-${Math.max(...kills)} ms, ledger ${ledger.ok ? 'verified' : 'NOT verified'}, ${Math.round((Date.now() - started) / 1000)} s`,
      );
      // The first failures of each kind, printed now: a later hang or kill would lose the assertion's message.
      for (const [kind, failures] of Object.entries({
        'slow or busy replay': tally.slowOrBusyReplays,
        'double effect': tally.doubleEffects,
        'changed answer': tally.changedAnswers,
        'unstable replay': tally.unstableReplays,
      })) {
        for (const failure of failures.slice(0, 5)) console.info(`  ${kind}: ${failure}`);
      }
      expect({
        slowOrBusyReplays: tally.slowOrBusyReplays,
        doubleEffects: tally.doubleEffects,
        changedAnswers: tally.changedAnswers,
        unstableReplays: tally.unstableReplays,
      }).toEqual({ slowOrBusyReplays: [], doubleEffects: [], changedAnswers: [], unstableReplays: [] });
      expect(ledger).toMatchObject({ ok: true, sum_micro: '0', discrepancies: [] });
    });
  });
});
