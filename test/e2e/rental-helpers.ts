// Rentals over real parts, for the renting end-to-end tests and the rental benchmark: a private dockerd with a job
// image pushed to a loopback registry (pulled by digest), a control plane (`ark-cp serve`) on either store, a renter
// and a host made with its CLI, and a paired `ark-agent run` whose jobs run on that dockerd with host networking.
// Everything is driven through public faces: HTTP, the CLIs, the agent's state directory and status, SSH/SFTP.
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { chargesFor } from '@ark/control-plane/domain/metering/charges';
import { fingerprintOf, generateHostKey } from '@ark/host-agent/access/index';
import { Client, type ClientChannel, type SFTPWrapper } from 'ssh2';
import { type DockerDaemon, startDockerd } from '../harness/dockerd.js';
import { buildTestImage, type TestImage } from '../harness/images.js';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { freePort, type SpawnedProcess, waitFor } from '../harness/processes.js';
import {
  type AgentSetup,
  type ControlPlane,
  agentSetup,
  agentStatus,
  api,
  controlPlaneCli,
  hostSession,
  pairAgent,
  startAgent,
  startControlPlane,
} from './host-side-helpers.js';

export type Dialect = 'sqlite' | 'postgres';
export const DIALECTS: readonly Dialect[] = ['sqlite', 'postgres'];

/** The job image's main process: a shell that ends at once on SIGTERM (a bare `sleep` as PID 1 ignores it). */
export const JOB_COMMAND = ['sh', '-c', "trap 'exit 0' TERM; while :; do sleep 1; done"];

/** 10 micro-USDC per millisecond of machine time (36 USDC an hour): charges grow visibly every second. */
export const MACHINE_RATE_MICRO_PER_HOUR = 36_000_000n;

export interface DockerWorld {
  daemon: DockerDaemon;
  image: TestImage;
  stop(): Promise<void>;
}

/** A private dockerd and the job image in a loopback registry; the image stays in the engine (a local image). */
export async function startDockerWorld(): Promise<DockerWorld> {
  const daemon = await startDockerd();
  try {
    const image = await buildTestImage(daemon, {
      repository: 'ark-test/rental',
      changes: [`CMD ${JSON.stringify(JOB_COMMAND)}`, 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'WORKDIR /workspace'],
    });
    return {
      daemon,
      image,
      stop: async () => {
        await image.registry.stop();
        await daemon.stop();
      },
    };
  } catch (error) {
    await daemon.stop();
    throw error;
  }
}

/** Job containers (every state) on the world's engine, as `docker ps -a` names them. */
export async function jobContainers(world: DockerWorld): Promise<string[]> {
  const { stdout } = await world.daemon.docker(['ps', '--all', '--filter', 'label=ark.job_id', '--format', '{{.Names}}']);
  return stdout.split('\n').filter((line) => line.trim() !== '');
}

export async function jobVolumes(world: DockerWorld): Promise<string[]> {
  const { stdout } = await world.daemon.docker(['volume', 'ls', '--filter', 'label=ark.job_id', '--format', '{{.Name}}']);
  return stdout.split('\n').filter((line) => line.trim() !== '');
}

export interface SiteOptions {
  /** Extra control-plane environment (intervals, windows, timeouts). */
  cpEnv?: NodeJS.ProcessEnv;
  /** Renter credit in micro-USDC. */
  creditMicro?: bigint;
  /** Give the control plane an ARK_REPLICA_URL (its own loopback address), so that a second replica can reach it. */
  replica?: boolean;
  /** Extra fields of the agent's config file (job limits, check intervals). */
  agentConfig?: Record<string, unknown>;
  /** A control plane started elsewhere (the cluster test's load balancer, its env for the CLI): not started or stopped here. */
  controlPlane?: ControlPlane;
  /** The URL the agent pairs with and keeps its channel to (default: the control plane's). */
  agentBase?: string;
}

/** The control-plane settings of a rental site: fast heartbeats and meter, the seeded machine rate, no spend cap. */
export const RENTAL_CP_ENV: Readonly<NodeJS.ProcessEnv> = {
  ARK_HEARTBEAT_INTERVAL_S: '1',
  ARK_METER_INTERVAL_S: '1',
  ARK_RETRIEVAL_WINDOW_S: '6',
  ARK_SEED_RATE_MICRO_PER_HOUR: MACHINE_RATE_MICRO_PER_HOUR.toString(),
  // Metered this fast, a few jobs pass the default spend-rate cap (50 USDC/h): the cap is spend-cap.test.ts's business.
  ARK_SPEND_RATE_CAP_MICRO_PER_HOUR: '1000000000000000',
};

export interface RenterKey {
  privateKey: string;
  publicKey: string;
}

/** One marketplace on one store: control plane, a host with a paired agent on the world's engine, a funded renter. */
export class RentalSite {
  cp!: ControlPlane;
  agent: SpawnedProcess | undefined;
  agentSetup!: AgentSetup;
  machineId = '';
  offerId = '';
  hostEmail = `host-${randomUUID().slice(0, 8)}@example.test`;
  hostToken = '';
  renterEmail = `renter-${randomUUID().slice(0, 8)}@example.test`;
  renterKey = '';
  creditMicro = 0n;
  /** The renter's SSH key (ed25519 from the agent's own generator, OpenSSH format). */
  readonly ssh: RenterKey;
  database: TestDatabase | undefined;
  cpEnv: NodeJS.ProcessEnv = {};
  /** The control plane was handed in (SiteOptions.controlPlane): stop() leaves it running. */
  external = false;

  private constructor(
    readonly dialect: Dialect,
    readonly world: DockerWorld,
  ) {
    const key = generateHostKey();
    this.ssh = { privateKey: key.privateKey, publicKey: key.publicKey };
  }

  static async start(dialect: Dialect, world: DockerWorld, options: SiteOptions = {}): Promise<RentalSite> {
    const site = new RentalSite(dialect, world);
    try {
      await site.#start(options);
    } catch (error) {
      await site.stop();
      throw error;
    }
    return site;
  }

  async #start(options: SiteOptions): Promise<void> {
    if (options.controlPlane !== undefined) {
      this.external = true;
      this.cp = options.controlPlane;
      this.cpEnv = options.controlPlane.env;
    } else {
      if (this.dialect === 'postgres') this.database = await createTestDatabase();
      this.cpEnv = { ...RENTAL_CP_ENV, ...options.cpEnv };
      const port = options.replica ? await freePort() : undefined;
      if (port !== undefined) this.cpEnv.ARK_REPLICA_URL = `http://127.0.0.1:${port}`;
      this.cp = await startControlPlane({
        databaseUrl: this.database?.url ?? null,
        env: this.cpEnv,
        ...(port === undefined ? {} : { port }),
      });
    }
    this.creditMicro = options.creditMicro ?? 1_000_000_000n;
    // Each CLI run is a process start: the host and the renter are made side by side.
    const renter = async () => {
      await this.cli(['accounts', 'create', '--email', this.renterEmail, '--role', 'renter', '--verified']);
      const [key] = await Promise.all([
        this.cli(['keys', 'create', '--email', this.renterEmail, '--scopes', 'renter', '--label', 'e2e']),
        this.cli(['ledger', 'credit', '--email', this.renterEmail, '--amount-micro', this.creditMicro.toString(), '--reason', 'e2e']),
      ]);
      this.renterKey = key.secret as string;
    };
    [this.hostToken] = await Promise.all([hostSession(this.cp, this.hostEmail), renter()]);

    // Below Linux's ephemeral range (32768-60999): an outgoing connection never takes a job's port while the agent is down.
    const first = 20_000 + Math.floor(Math.random() * 12_000);
    this.agentSetup = agentSetup(
      {
        heartbeat_interval_s: 1,
        telemetry_sample_interval_s: 5,
        telemetry_batch_interval_s: 30,
        min_disk_free_bytes: 0,
        docker_socket_path: this.world.daemon.socketPath,
        // dockerd runs with --bridge=none here: job containers share the host's network.
        job_network_mode: 'host',
        ssh_bind_host: '127.0.0.1',
        public_host: '127.0.0.1',
        job_port_range: { from: first, to: first + 49 },
        // No GPU on this machine: the agent enrolls without one and is rented whole.
        nvidia_smi_path: '/nonexistent/nvidia-smi',
        ...options.agentConfig,
      },
      { ARK_AGENT_LOG_LEVEL: 'info' },
    );
    const pairWith = options.agentBase === undefined ? this.cp : { ...this.cp, base: options.agentBase };
    this.machineId = (await pairAgent(pairWith, this.hostToken, this.agentSetup)).machineId;
    await this.startAgent();
    const offers = await this.renter('GET', '/api/v1/offers?limit=100');
    const offer = (offers.body.items as Array<{ offer_id: string; machine_id: string }>).find((item) => item.machine_id === this.machineId);
    if (offer === undefined) throw new Error(`no offer listed for machine ${this.machineId}: ${JSON.stringify(offers.body)}`);
    this.offerId = offer.offer_id;
  }

  /** `ark-cp <args>` against this site's store; its JSON output parsed. */
  async cli(args: string[]): Promise<any> {
    const stdout = await controlPlaneCli(this.cp, args);
    return JSON.parse(stdout);
  }

  renter(method: string, path: string, body?: unknown, idempotent = method === 'POST') {
    return api(this.cp.base, method, path, { token: this.renterKey, ...(body === undefined ? {} : { body }), idempotent });
  }

  /** `ark-agent run`, then waits for the machine to be live and online again. */
  async startAgent(): Promise<void> {
    this.agent = startAgent(this.agentSetup, ['run']);
    await this.waitMachineOnline();
  }

  /** The host's view of the machine (GET /api/v1/hosts/machines/:id): liveness, last heartbeat, problems. */
  machine() {
    return api(this.cp.base, 'GET', `/api/v1/hosts/machines/${this.machineId}`, { token: this.hostToken });
  }

  async waitMachineOnline(): Promise<void> {
    const agent = this.agent as SpawnedProcess;
    await waitFor(
      async () => {
        if (!agent.isRunning()) throw new Error(`ark-agent run exited:\n${agent.output()}`);
        const answer = await this.machine();
        return answer.status === 200 && answer.body.live === 'live' && answer.body.liveness === 'online' && answer.body.healthy === true;
      },
      { timeoutMs: 60_000, intervalMs: 200, description: 'the machine to be live, online and healthy' },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${this.logs()}`);
    });
  }

  async killAgent(): Promise<void> {
    await this.agent?.stop('SIGKILL');
    this.agent = undefined;
  }

  async stopAgent(): Promise<void> {
    const exit = await this.agent?.stop('SIGTERM', { timeoutMs: 20_000 });
    if (exit !== undefined && exit.code !== 0) throw new Error(`ark-agent run exited with ${JSON.stringify(exit)}\n${this.logs()}`);
    this.agent = undefined;
  }

  /** Kills the control plane without warning (SIGKILL); `startControlPlaneAgain` brings it back. */
  async killControlPlane(): Promise<void> {
    await this.cp.process.stop('SIGKILL');
  }

  /** Resolves when the control plane's process exits (a fault point's SIGKILL, ARK_FAULT_EXIT_AT). */
  controlPlaneExited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.cp.process.exited;
  }

  /** Starts the control plane again on the same port, data dir and store, with `env` added (a changed setting). */
  async startControlPlaneAgain(env: NodeJS.ProcessEnv = {}): Promise<void> {
    this.cpEnv = { ...this.cpEnv, ...env };
    this.cp = await startControlPlane({
      port: this.cp.port,
      dataDir: this.cp.dataDir,
      databaseUrl: this.database?.url ?? null,
      env: this.cpEnv,
    });
  }

  /** Stops the control plane cleanly and starts it again with `env` added. */
  async restartControlPlane(env: NodeJS.ProcessEnv = {}): Promise<void> {
    await this.cp.process.stop('SIGTERM');
    await this.startControlPlaneAgain(env);
  }

  /** `ark-agent status --json`. */
  agentStatus(): Promise<any> {
    return agentStatus(this.agentSetup);
  }

  /** Quote (the image by digest, the whole machine) and reserve; answers the job id and the quote. */
  async reserve(options: {
    budgetMicro: bigint;
    durationS?: number;
    env?: Record<string, string>;
  }): Promise<{ jobId: string; quote: any }> {
    const quote = () =>
      this.renter('POST', '/api/v1/quotes', {
        offer_id: this.offerId,
        gpu_count: 1,
        duration_limit_s: options.durationS ?? 600,
        budget_micro: options.budgetMicro.toString(),
        image_digest: this.world.image.digestRef,
      });
    // Just after a control plane restart the agent may still be reconnecting, and on a loaded machine a heartbeat can
    // come late enough that the machine reads offline between the quote and the reservation: MACHINE_NOT_AVAILABLE is
    // retryable, so retry it (quote and reservation), as a client would, until the agent's heartbeats are fresh again.
    const unavailable = (answer: { status: number; body: any }) =>
      answer.status === 409 && answer.body?.error?.code === 'MACHINE_NOT_AVAILABLE';
    let quoted = await quote();
    let reserved: { status: number; body: any } | null = null;
    for (let tries = 0; tries < 120; tries++) {
      if (quoted.status === 201) {
        reserved = await this.renter('POST', '/api/v1/jobs', {
          quote_id: quoted.body.quote_id,
          ssh_public_keys: [this.ssh.publicKey],
          ...(options.env === undefined ? {} : { env: options.env }),
        });
        if (!unavailable(reserved)) break;
      } else if (!unavailable(quoted)) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
      quoted = await quote();
    }
    if (quoted.status !== 201) throw new Error(`quote: ${quoted.status} ${JSON.stringify(quoted.body)}`);
    if (reserved?.status !== 202) throw new Error(`reserve: ${reserved?.status} ${JSON.stringify(reserved?.body)}`);
    return { jobId: reserved.body.job_id as string, quote: quoted.body };
  }

  async job(jobId: string): Promise<any> {
    const answer = await this.renter('GET', `/api/v1/jobs/${jobId}`);
    if (answer.status !== 200) throw new Error(`job: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  }

  /** Polls the job until `accept` holds; fails fast, with the logs, if it ends up FAILED unexpectedly. */
  async waitJob(jobId: string, accept: (job: any) => boolean, description: string, timeoutMs = 60_000): Promise<any> {
    let last: any;
    return waitFor(
      async () => {
        last = await this.job(jobId);
        if (accept(last)) return last;
        if (last.state === 'FAILED') throw new Error(`job ${jobId} FAILED (${last.close_reason}) while waiting for ${description}`);
        return undefined;
      },
      { timeoutMs, intervalMs: 100, description },
    ).catch(async (error: Error) => {
      throw new Error(
        `${error.message}\nlast job: ${JSON.stringify(last)}\nevents: ${JSON.stringify(await this.events(jobId).catch(() => []))}\n${this.logs()}`,
      );
    });
  }

  waitState(jobId: string, state: string, timeoutMs?: number): Promise<any> {
    return this.waitJob(jobId, (job) => job.state === state, `job ${jobId} ${state}`, timeoutMs);
  }

  /** Every event of the job, following the cursor. */
  async events(jobId: string): Promise<Array<{ seq: number; kind: string; message: string; data: Record<string, any> }>> {
    const all = [];
    let cursor: string | null = null;
    do {
      const answer = await this.renter('GET', `/api/v1/jobs/${jobId}/events?limit=100${cursor === null ? '' : `&cursor=${cursor}`}`);
      if (answer.status !== 200) throw new Error(`events: ${answer.status} ${JSON.stringify(answer.body)}`);
      all.push(...answer.body.items);
      cursor = answer.body.next_cursor;
    } while (cursor !== null);
    return all;
  }

  async renterBalance(): Promise<{ available: bigint; held: bigint }> {
    const answer = await this.renter('GET', '/api/v1/billing/balance');
    if (answer.status !== 200) throw new Error(`balance: ${answer.status} ${JSON.stringify(answer.body)}`);
    return { available: BigInt(answer.body.available_micro), held: BigInt(answer.body.held_micro) };
  }

  /** The host's earnings, as the ledger holds them (`ark-cp ledger balance`): pending (not matured) and payable. */
  async hostBalances(): Promise<{ pending: bigint; payable: bigint }> {
    const balance = await this.cli(['ledger', 'balance', '--email', this.hostEmail]);
    return { pending: BigInt(balance.pending_micro), payable: BigInt(balance.payable_micro) };
  }

  /** Everything the host earned and still has: pending and payable (issue 24: charges land pending). */
  async hostEarned(): Promise<bigint> {
    const { pending, payable } = await this.hostBalances();
    return pending + payable;
  }

  async verifyLedger(): Promise<any> {
    return this.cli(['ledger', 'verify']);
  }

  /** The agent's persisted record of a job (`<state dir>/jobs/<job id>.json`). */
  async agentJobRecord(jobId: string): Promise<any> {
    return JSON.parse(await readFile(join(this.agentSetup.stateDir, 'jobs', `${jobId}.json`), 'utf8'));
  }

  async agentIdentity(): Promise<any> {
    return JSON.parse(await readFile(join(this.agentSetup.stateDir, 'identity.json'), 'utf8'));
  }

  /** Stops the job over HTTP and waits for CLOSED. */
  async stopAndClose(jobId: string): Promise<any> {
    const stopped = await this.renter('POST', `/api/v1/jobs/${jobId}/stop`, { reason: 'done' });
    if (stopped.status !== 202) throw new Error(`stop: ${stopped.status} ${JSON.stringify(stopped.body)}`);
    return this.waitState(jobId, 'CLOSED', 60_000);
  }

  logs(): string {
    return `--- agent ---\n${this.agent?.output().slice(-6000) ?? '(not running)'}\n--- control plane ---\n${this.cp?.process.output().slice(-6000) ?? ''}`;
  }

  async stop(): Promise<void> {
    await this.agent?.stop('SIGTERM', { timeoutMs: 15_000 }).catch(() => undefined);
    if (!this.external) await this.cp?.process.stop('SIGTERM').catch(() => undefined);
    await this.database?.drop().catch(() => undefined);
    if (this.agentSetup !== undefined) await rm(dirname(this.agentSetup.stateDir), { recursive: true, force: true });
    if (this.cp !== undefined && !this.external) await rm(this.cp.dataDir, { recursive: true, force: true });
  }
}

/** What the ledger must show for a job: DESIGN.md's formula on its snapshotted rate, budget and accepted runtime. */
export function expectedCharges(quote: { machine_rate_micro_per_hour: string; platform_fee_bps: number }, job: any) {
  return chargesFor(
    { machineRateMicroPerHour: BigInt(quote.machine_rate_micro_per_hour), platformFeeBps: BigInt(quote.platform_fee_bps) },
    BigInt(job.funded_budget_micro),
    BigInt(job.accepted_runtime_ms),
  );
}

// ---- SSH and SFTP as a renter's client ----

/** Rejects naming the step when a promise does not settle in time, so a hang points at its cause. */
export function within<T>(promise: Promise<T>, what: string, timeoutMs = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Connects as root with the renter's key; the server's host key must have the fingerprint the access endpoint gave. */
export function sshConnect(host: string, port: number, privateKey: string, expectedFingerprint: string): Promise<Client> {
  return within(
    new Promise((resolve, reject) => {
      const client = new Client();
      client.once('ready', () => resolve(client));
      client.once('error', reject);
      client.once('close', () => reject(new Error('connection closed before authentication')));
      client.connect({
        host,
        port,
        username: 'root',
        privateKey,
        readyTimeout: 10_000,
        hostVerifier: (key: Buffer) => fingerprintOf(key) === expectedFingerprint,
      });
    }),
    `ssh connect ${host}:${port}`,
  );
}

export function sshExec(client: Client, command: string): Promise<{ stdout: string; stderr: string; code: number | undefined }> {
  return within(
    new Promise((resolve, reject) => {
      client.exec(command, (error: Error | undefined, channel: ClientChannel) => {
        if (error) {
          reject(error);
          return;
        }
        let stdout = '';
        let stderr = '';
        let code: number | undefined;
        channel.on('data', (data: Buffer) => {
          stdout += data.toString();
        });
        channel.stderr.on('data', (data: Buffer) => {
          stderr += data.toString();
        });
        channel.on('exit', (exitCode: number) => {
          code = exitCode;
        });
        channel.on('close', () => resolve({ stdout, stderr, code }));
      });
    }),
    `ssh exec ${command}`,
  );
}

export function sftpOf(client: Client): Promise<SFTPWrapper> {
  return within(new Promise((resolve, reject) => client.sftp((error, sftp) => (error ? reject(error) : resolve(sftp)))), 'sftp session');
}

export function sftpRead(sftp: SFTPWrapper, path: string): Promise<string> {
  return within(
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      const stream = sftp.createReadStream(path) as Readable;
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.once('end', () => resolve(Buffer.concat(chunks).toString()));
      stream.once('error', reject);
    }),
    `sftp read ${path}`,
  );
}

export function sftpWrite(sftp: SFTPWrapper, path: string, content: string): Promise<void> {
  return within(
    new Promise((resolve, reject) => sftp.writeFile(path, content, (error) => (error ? reject(error) : resolve()))),
    `sftp write ${path}`,
  );
}

/** The endpoint of `kind` from a job's access answer. */
export function endpointOf(access: any, kind: string): { external_host: string; external_port: number } {
  const endpoint = (access.endpoints as Array<{ kind: string; external_host: string; external_port: number }>).find((e) => e.kind === kind);
  if (endpoint === undefined) throw new Error(`no ${kind} endpoint in ${JSON.stringify(access)}`);
  return endpoint;
}
