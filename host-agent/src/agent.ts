// The agent daemon's wiring: one object that starts the channel, heartbeats, telemetry, network tests, the self-test
// and the job runtime, routes commands to them, and stops them in order. What it is handed is typed in agent-ports.ts.
import type { CommandKind, CommandMessage, LogsCancelMessage, LogsOpenMessage } from '@ark/shared';
import type { AgentChannel, AgentJobs, AgentOptions, AgentTimers, HeartbeatBody, ReliableBody } from './agent-ports.js';
import { EngineRelay } from './jobs/engine-relay.js';
import type { LogsReply } from './jobs/job-logs.js';
import { type AgentMetricsHooks, noMetrics } from './metrics/hooks.js';
import { NettestRunner } from './nettest/runner.js';
import type { AgentSelftest } from './selftest/selftest-service.js';
import type { AgentStatusReport } from './state.js';
import { TelemetryPipeline } from './telemetry/pipeline.js';

const JOB_COMMANDS: ReadonlySet<CommandKind> = new Set(['launch_job', 'stop_job', 'clean_job']);

const HEALTH_CHECK_MS_MAX = 5000;

/** A problem that lasts is logged again this often, not at every heartbeat. */
const PROBLEM_LOG_REPEAT_MS = 5 * 60_000;

/** Wires the channel, heartbeats, telemetry and network tests; main.ts builds the real parts and hands them in. */
export class Agent {
  readonly #options: AgentOptions;
  readonly #now: () => Date;
  readonly #timers: AgentTimers;
  readonly #channel: AgentChannel;
  readonly #telemetry: TelemetryPipeline;
  readonly #nettest: NettestRunner;
  readonly #selftest: AgentSelftest | undefined;
  readonly #metrics: AgentMetricsHooks;
  readonly #handles: unknown[] = [];
  #startedAt: Date | undefined;
  #stoppedAt: Date | undefined;
  #lastHeartbeatSentAt: Date | undefined;
  #healthy: boolean | undefined;
  #problems: string[] = [];
  /** When each current problem was last logged (#logProblems). */
  readonly #problemLoggedAt = new Map<string, number>();
  #heartbeating = false;
  #commandsHandled = 0;
  #stopping: Promise<void> | undefined;
  #statusWriting: Promise<void> | undefined;
  #statusDirty = false;
  readonly #jobs: AgentJobs | undefined;
  /** The relay tunnel's end on this machine: engine requests of running model jobs. */
  readonly #relay: EngineRelay;
  /** Settles once the job runtime has started (or failed to); job commands wait for it. */
  readonly #jobsReady = deferred();
  #jobsStarted = false;
  #jobsProblem: string | undefined;

  constructor(options: AgentOptions) {
    this.#options = options;
    this.#metrics = options.metrics ?? noMetrics;
    this.#now = options.now ?? (() => new Date());
    this.#timers = options.timers ?? {
      setInterval: (callback, ms) => setInterval(callback, ms),
      clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
    };
    this.#relay = new EngineRelay({
      target: (jobId, fence) => this.#jobs?.engineTarget?.(jobId, fence),
      send: (body) => this.#channel.sendRelay?.(body) ?? false,
      logger: options.logger,
    });
    this.#channel = options.createChannel({
      onCommand: (command) => this.handleCommand(command),
      onRelay: (msg) => this.#relay.handle(msg),
      onLogs: (msg) => this.#handleLogs(msg),
    });
    const enqueue = (body: ReliableBody) => this.#channel.enqueue(body);
    this.#telemetry = new TelemetryPipeline({
      gpu: options.gpu,
      host: options.host,
      now: this.#now,
      bufferSamples: options.telemetryBufferSamples,
      enqueue,
      logger: options.logger,
      onCollectorError: (collector) => this.#metrics.collectorError(collector),
    });
    this.#nettest = new NettestRunner({
      bounds: options.nettestBounds,
      now: this.#now,
      enqueue,
      logger: options.logger,
      onReceipt: () => void this.#persistStatus(),
      ...(options.measureNetwork === undefined ? {} : { measure: options.measureNetwork }),
    });
    this.#selftest = options.createSelftest?.(enqueue, () => void this.#persistStatus());
    this.#jobs = options.createJobs?.(
      {
        enqueue: (body) => {
          if (body.t === 'job_status') this.#metrics.jobStatus(body.status);
          return enqueue(body);
        },
      },
      this.#selftest,
    );
  }

  /**
   * The host reads its own log first: a problem (Docker unreachable, a full disk) is logged when it appears, again
   * every PROBLEM_LOG_REPEAT_MS while it lasts (not at every heartbeat), and once when it clears.
   */
  #logProblems(problems: readonly string[]): void {
    const now = this.#now().getTime();
    for (const problem of problems) {
      const logged = this.#problemLoggedAt.get(problem);
      if (logged !== undefined && now - logged < PROBLEM_LOG_REPEAT_MS) continue;
      this.#options.logger.warn({ problem, repeated: logged !== undefined }, `not healthy: ${problem}`);
      this.#problemLoggedAt.set(problem, now);
    }
    for (const problem of this.#problemLoggedAt.keys()) {
      if (problems.includes(problem)) continue;
      this.#options.logger.info({ problem }, `healthy again: ${problem} is gone`);
      this.#problemLoggedAt.delete(problem);
    }
  }

  async start(): Promise<void> {
    this.#startedAt = this.#now();
    // What stops the machine from running jobs is said at start, before any channel or heartbeat.
    this.#logProblems(await withTimeout(this.#options.checkHealth(), HEALTH_CHECK_MS_MAX, ['health check did not finish in time']));
    // `ark-agent status` should show a connection change or an acknowledgement without waiting for the next tick.
    for (const event of ['connected', 'disconnected', 'ack'] as const) this.#channel.on?.(event, () => void this.#persistStatus());
    // Relay streams live on one connection: the control plane fails them when it ends, so the engine requests stop too.
    this.#channel.on?.('disconnected', () => this.#relay.abortAll());
    this.#channel.on?.('disconnected', () => this.#jobs?.abortLogStreams?.());
    this.#channel.on?.('connected', () => this.#metrics.channelConnected());
    await this.#channel.start();
    // After the channel's queue is open (the job runtime re-sends what it had not handed over), and before
    // any job command is applied: those wait on this.
    await this.#startJobs();
    const every = (ms: number, task: () => Promise<unknown>, what: string) => {
      this.#handles.push(
        this.#timers.setInterval(() => {
          task().catch((error: unknown) => this.#options.logger.error({ error: String(error) }, `${what} failed`));
        }, ms),
      );
    };
    every(this.#options.heartbeatIntervalMs, () => this.heartbeat(), 'heartbeat');
    every(this.#options.telemetrySampleIntervalMs, () => this.#telemetry.sample(), 'telemetry sample');
    every(this.#options.telemetryBatchIntervalMs, () => this.flushTelemetry(), 'telemetry batch');
    // A first sample now, so the first batch is never empty; the first heartbeat goes out when the channel connects.
    void this.#telemetry
      .sample()
      .catch((error: unknown) => this.#options.logger.error({ error: String(error) }, 'telemetry sample failed'));
    await this.#persistStatus();
  }

  /** Sends a heartbeat now (the timer calls this, and main calls it when the channel connects, to go live sooner). */
  async heartbeat(): Promise<void> {
    if (this.#heartbeating || this.#stopping !== undefined) return;
    this.#heartbeating = true;
    try {
      const problems = await withTimeout(this.#options.checkHealth(), HEALTH_CHECK_MS_MAX, ['health check did not finish in time']);
      const all = this.#jobsProblem === undefined ? problems : [...problems, this.#jobsProblem];
      this.#problems = all.slice(0, 16).map((problem) => problem.slice(0, 200));
      this.#logProblems(this.#problems);
      this.#healthy = this.#problems.length === 0;
      const at = this.#now();
      const sent = this.#channel.sendHeartbeat({
        t: 'heartbeat',
        at: at.toISOString(),
        uptime_s: Math.max(0, Math.floor((at.getTime() - (this.#startedAt ?? at).getTime()) / 1000)),
        healthy: this.#healthy,
        problems: this.#problems,
        running_jobs: this.#runningJobs(),
      });
      // A channel that is down drops the heartbeat and says so (false).
      if (sent !== false) this.#metrics.heartbeatSent();
      this.#lastHeartbeatSentAt = at;
    } finally {
      this.#heartbeating = false;
    }
    await this.#persistStatus();
  }

  async flushTelemetry(): Promise<void> {
    await this.#telemetry.flush();
    await this.#persistStatus();
  }

  async handleCommand(command: CommandMessage): Promise<void> {
    this.#commandsHandled += 1;
    const custom = this.#options.commandHandlers?.[command.kind];
    if (custom !== undefined) return custom(command);
    if (this.#jobs !== undefined && JOB_COMMANDS.has(command.kind)) return this.#handleJobCommand(command, this.#jobs);
    switch (command.kind) {
      case 'run_nettest':
        this.#nettest.submit(command.command_id, command.body);
        return;
      case 'run_selftest':
        if (this.#selftest === undefined) break;
        // In the background: the receipt (naming this command) follows when the benchmark has run.
        this.#selftest.submit(command.command_id, command.body);
        return;
      case 'update_go_live':
        // Go-live is the control plane's decision; the agent only notes it.
        this.#options.logger.info({ command_id: command.command_id, go_live: command.body.go_live }, 'go-live changed');
        return;
      default:
        break;
    }
    this.#options.logger.warn(
      { command_id: command.command_id, kind: command.kind },
      'command not supported by this agent version; ignored',
    );
  }

  /** A job-log request: answered by the job runtime once it has started; without one, the log is not here. */
  #handleLogs(msg: LogsOpenMessage | LogsCancelMessage): void {
    const send = (body: LogsReply) => this.#channel.sendLogs?.(body) ?? false;
    if (this.#jobs?.handleLogs === undefined) {
      if (msg.t === 'logs_open') send({ t: 'logs_end', stream_id: msg.stream_id, error: 'not_found', detail: 'this agent runs no jobs' });
      return;
    }
    const jobs = this.#jobs;
    void this.#jobsReady.promise.then(() => {
      if (this.#jobsStarted && this.#jobsProblem === undefined) jobs.handleLogs?.(msg, send);
      else if (msg.t === 'logs_open')
        send({ t: 'logs_end', stream_id: msg.stream_id, error: 'unavailable', detail: 'the job runtime is not running' });
    });
  }

  /** Clean shutdown: timers stop, buffered samples go to the channel's persistent queue, the channel closes. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    for (const handle of this.#handles.splice(0)) this.#timers.clearInterval(handle);
    this.#relay.abortAll();
    await withTimeout(this.#nettest.idle(), this.#options.shutdownGraceMs ?? 5000, undefined);
    // A self-test still running ends with the process; its command is answered again by the next run.
    if (this.#selftest !== undefined) await withTimeout(this.#selftest.idle(), this.#options.shutdownGraceMs ?? 5000, undefined);
    // Before the channel closes: the job runtime's last messages still go to the channel's persistent queue.
    if (this.#jobs !== undefined && this.#jobsStarted && this.#jobsProblem === undefined) {
      try {
        await this.#jobs.close();
      } catch (error) {
        this.#options.logger.warn({ error: String(error) }, 'job runtime did not close cleanly');
      }
    }
    try {
      await this.#telemetry.flush();
    } catch (error) {
      this.#options.logger.warn({ error: String(error) }, 'telemetry not flushed at shutdown');
    }
    await this.#channel.stop();
    this.#stoppedAt = this.#now();
    await this.#persistStatus();
  }

  report(): AgentStatusReport {
    const now = this.#now();
    const lastNettest = this.#nettest.lastReceipt();
    return {
      pid: this.#options.pid ?? process.pid,
      agent_version: this.#options.agentVersion,
      started_at: (this.#startedAt ?? now).toISOString(),
      updated_at: now.toISOString(),
      ...(this.#stoppedAt === undefined ? {} : { stopped_at: this.#stoppedAt.toISOString() }),
      machine_id: this.#options.machineId,
      ...this.#options.describe,
      channel: this.#channel.status(),
      last_heartbeat_sent_at: this.#lastHeartbeatSentAt?.toISOString() ?? null,
      healthy: this.#healthy ?? null,
      problems: this.#problems,
      telemetry: this.#telemetry.counters(),
      commands_handled: this.#commandsHandled,
      last_nettest: lastNettest ?? null,
      ...(this.#selftest === undefined ? {} : { last_selftest: summariseSelftest(this.#selftest.lastReceipt()) }),
      running_jobs: this.#runningJobs(),
      ...(this.#jobsProblem === undefined ? {} : { jobs_problem: this.#jobsProblem }),
    };
  }

  async #startJobs(): Promise<void> {
    if (this.#jobs === undefined) return;
    try {
      await this.#jobs.start();
      this.#jobsStarted = true;
    } catch (error) {
      // The agent keeps heartbeating and reporting: the host sees the problem and the machine is not healthy.
      this.#jobsProblem = `job runtime unavailable: ${error instanceof Error ? error.message : String(error)}`.slice(0, 200);
      this.#options.logger.error({ error: String(error) }, 'job runtime could not start; job commands will fail');
    } finally {
      this.#jobsReady.resolve();
    }
  }

  #runningJobs(): HeartbeatBody['running_jobs'] {
    if (this.#jobs === undefined || !this.#jobsStarted) return [];
    try {
      return this.#jobs.runningJobs();
    } catch (error) {
      this.#options.logger.warn({ error: String(error) }, 'running jobs could not be listed');
      return [];
    }
  }

  async #handleJobCommand(command: CommandMessage, jobs: AgentJobs): Promise<void> {
    if (this.#stopping !== undefined) {
      // Never settles: the channel does not record the command as applied, so the next run receives it again.
      this.#options.logger.info({ command_id: command.command_id, kind: command.kind }, 'job command left for the next run');
      return new Promise<void>(() => undefined);
    }
    await this.#jobsReady.promise;
    if (this.#jobsProblem === undefined) {
      await jobs.handleCommand(command);
      return;
    }
    // The job runtime did not start: the control plane is told at once, so the job fails (or finishes) instead of waiting.
    const body = command.body as { job_id: string; fence: string };
    const detail = this.#jobsProblem;
    const status = command.kind === 'launch_job' ? 'failed' : command.kind === 'stop_job' ? 'stopped' : 'cleaned';
    this.#options.logger.warn({ command_id: command.command_id, kind: command.kind, job_id: body.job_id, detail }, 'job command refused');
    await this.#channel.enqueue({
      t: 'job_status',
      job_id: body.job_id,
      fence: body.fence,
      status,
      at: this.#now().toISOString(),
      detail,
    });
  }

  /** Writes the report; calls that arrive during a write are folded into one more write after it. */
  #persistStatus(): Promise<void> {
    if (this.#statusWriting !== undefined) {
      this.#statusDirty = true;
      return this.#statusWriting;
    }
    this.#statusWriting = (async () => {
      do {
        this.#statusDirty = false;
        try {
          await this.#options.writeStatus(this.report());
        } catch (error) {
          this.#options.logger.warn({ error: String(error) }, 'status file not written');
        }
      } while (this.#statusDirty);
    })().finally(() => {
      this.#statusWriting = undefined;
    });
    return this.#statusWriting;
  }
}

/** What `ark-agent status` shows of the last self-test: its outcome and headline figures, not the whole receipt. */
function summariseSelftest(body: ReturnType<AgentSelftest['lastReceipt']>): Record<string, unknown> | null {
  if (body === undefined) return null;
  return {
    receipt_seq: body.receipt_seq,
    trigger: body.trigger,
    measured_at: body.measured_at,
    ok: body.ok,
    ...(body.error === undefined ? {} : { error: body.error }),
    gpus: body.gpus.length,
    ...(body.benchmark === undefined
      ? {}
      : { matmul_gflops: body.benchmark.matmul_gflops, memory_bandwidth_gbps: body.benchmark.memory_bandwidth_gbps }),
  };
}

/** Resolves to `fallback` if `promise` takes longer than `ms`; the timer never keeps the process alive. */
function withTimeout<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}
