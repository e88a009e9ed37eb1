import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { action } from '../action.js';
import type { ApiClient } from '../client.js';
import type { CommandContext } from '../context.js';
import { CliError, EXIT, usageError } from '../exit-codes.js';
import { readTextFile } from '../input.js';
import { durationToSeconds, formatUsdc, usdcToMicro } from '../money.js';
import { jobProgress } from '../progress.js';
import { EventFollower, eventsAfter, followEvents, followLogs, type JobEvent, type JobLogLine, LOG_TAIL_MAX } from './job-follow.js';
import { positiveInteger } from './offers.js';

// Renting: quote, reserve and wait for RUNNING, then watch, extend and stop the job. Following a job's events and
// output, with its reconnects, lives in job-follow.ts.

export interface Job {
  job_id: string;
  state: string;
  job_version: string;
  budget_version: string;
  cumulative_charge_micro: string;
  funded_through: string;
  machine_id?: string;
  rate_micro_per_hour?: string;
  meter_started_at?: string | null;
  stopped_at?: string | null;
  gpu_model?: string;
  gpu_count?: number;
  template?: { name: string };
  close_reason?: string;
}

interface Quote {
  quote_id: string;
  expires_at: string;
  machine_id: string;
  gpu_count: number;
  machine_rate_micro_per_hour: string;
  platform_fee_bps: number;
  budget_micro: string;
  duration_limit_s: number;
  image_digest: string;
  estimated_total_micro?: string;
}

/** States past running; from STOPPED on the unspent hold is back in the balance (it is released with the stop). */
const TERMINAL = new Set(['CLOSED', 'FAILED', 'STOPPED', 'CLEANING']);

interface QuoteOptions {
  gpus: string;
  duration: string;
  budget?: string;
  template?: string;
  image?: string;
}

function quoteOptions(command: Command): Command {
  return command
    .option('--gpus <n>', 'GPUs to rent', '1')
    .option('--duration <duration>', 'duration limit, like 30m, 2h or 1d', '1h')
    .option('--budget <usdc>', 'budget in USDC (default: the estimated total for the duration)')
    .option('--template <template-id>', 'run a catalog template (its runtime for the machine)')
    .option('--image <ref@sha256:digest>', 'run a custom image, pinned by digest');
}

async function createQuote(api: ApiClient, offerId: string, options: QuoteOptions): Promise<Quote> {
  if ((options.template === undefined) === (options.image === undefined)) throw usageError('give exactly one of --template and --image');
  return api.post<Quote>(
    '/api/v1/quotes',
    {
      offer_id: offerId,
      gpu_count: positiveInteger(options.gpus, '--gpus'),
      duration_limit_s: durationToSeconds(options.duration, '--duration'),
      ...(options.budget === undefined ? {} : { budget_micro: usdcToMicro(options.budget, '--budget').toString() }),
      ...(options.template === undefined ? {} : { template_id: options.template }),
      ...(options.image === undefined ? {} : { image_digest: options.image }),
    },
    { idempotent: true },
  );
}

function showQuote(ctx: CommandContext, quote: Quote): void {
  ctx.out.fields([
    ['quote', quote.quote_id],
    ['machine', quote.machine_id],
    ['GPUs', quote.gpu_count],
    ['machine rate', `${formatUsdc(quote.machine_rate_micro_per_hour)} USDC/h + ${quote.platform_fee_bps / 100}% fee`],
    ['duration limit', `${quote.duration_limit_s} s`],
    ['budget', `${formatUsdc(quote.budget_micro)} USDC`],
    ['estimated total', quote.estimated_total_micro === undefined ? '-' : `${formatUsdc(quote.estimated_total_micro)} USDC`],
    ['image', quote.image_digest],
    ['expires', quote.expires_at],
  ]);
}

export function showJob(ctx: CommandContext, job: Job): void {
  ctx.out.fields([
    ['job', job.job_id],
    ['state', job.state],
    ['machine', job.machine_id],
    ['GPU', job.gpu_model === undefined ? '-' : `${job.gpu_count ?? 1} x ${job.gpu_model}`],
    ['template', job.template?.name],
    ['rate', job.rate_micro_per_hour === undefined ? '-' : `${formatUsdc(job.rate_micro_per_hour)} USDC/h`],
    ['charged', `${formatUsdc(job.cumulative_charge_micro)} USDC`],
    ['funded through', job.funded_through],
    ['meter started', job.meter_started_at],
    ['stopped', job.stopped_at],
  ]);
}

function sshPublicKeys(paths: string[]): string[] {
  const chosen = paths.length > 0 ? paths : defaultPublicKey();
  return chosen.map((path) => {
    const key = readTextFile(path, 'SSH public key').trim();
    if (!/^(ssh-|ecdsa-|sk-)/.test(key)) throw usageError(`${path} does not hold an OpenSSH public key`);
    return key;
  });
}

function defaultPublicKey(): string[] {
  for (const name of ['id_ed25519.pub', 'id_ecdsa.pub', 'id_rsa.pub']) {
    const path = join(homedir(), '.ssh', name);
    if (existsSync(path)) return [path];
  }
  throw usageError('no SSH public key: give one with --ssh-key <file.pub>');
}

function parseEnv(pairs: string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw usageError(`--env needs NAME=value (got "${pair}")`);
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

const collect = (value: string, previous: string[]) => [...previous, value];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the job's `hold_released` event gave back to the balance, or null before the release. */
async function releasedMicro(api: ApiClient, jobId: string): Promise<string | null> {
  const { items } = await eventsAfter(api, jobId, null);
  const released = items.find((event) => event.kind === 'hold_released');
  return typeof released?.data.released_micro === 'string' ? released.data.released_micro : null;
}

export function registerJobCommands(program: Command): void {
  quoteOptions(program.command('quote <offer-id>').description('A binding price for an offer, valid 60 seconds')).action(
    action(async (ctx, offerId: string, options: QuoteOptions) => {
      const quote = await createQuote(ctx.api, offerId, options);
      ctx.out.result(quote, () => showQuote(ctx, quote));
    }),
  );

  const jobs = program.command('jobs').description('Your rentals');
  quoteOptions(
    jobs
      .command('create <offer-id>')
      .description('Quote and reserve in one step, then wait for RUNNING showing the image pull and start from the job’s events'),
  )
    .option('--ssh-key <file.pub>', 'OpenSSH public key allowed in (repeatable; default ~/.ssh/id_ed25519.pub)', collect, [])
    .option('--env <NAME=value>', 'environment variable for the job (repeatable)', collect, [])
    .option('--no-wait', 'answer as soon as the job is reserved')
    .option('--timeout <duration>', 'how long to wait for RUNNING', '10m')
    .option('-q, --quiet', 'no progress on stderr')
    .action(
      action(
        async (
          ctx,
          offerId: string,
          options: QuoteOptions & { sshKey: string[]; env: string[]; wait: boolean; timeout: string; quiet?: boolean },
        ) => {
          const keys = sshPublicKeys(options.sshKey);
          const env = parseEnv(options.env);
          const timeoutMs = durationToSeconds(options.timeout, '--timeout') * 1000;
          const quote = await createQuote(ctx.api, offerId, options);
          const created = await ctx.api.post<{ job_id: string; state: string }>(
            '/api/v1/jobs',
            { quote_id: quote.quote_id, ssh_public_keys: keys, ...(env === undefined ? {} : { env }) },
            { idempotent: true },
          );
          ctx.out.note(`Reserved job ${created.job_id} for up to ${formatUsdc(quote.budget_micro)} USDC.`);
          if (!options.wait) {
            ctx.out.result({ quote, job: created }, () => ctx.out.line(created.job_id));
            return;
          }
          // Progress goes to stderr even with --json: stdout keeps the one JSON result.
          const progress = await jobProgress(process.stderr, options.quiet !== true);
          const follower = new EventFollower(ctx.api, created.job_id);
          const deadline = Date.now() + timeoutMs;
          let job: Job;
          try {
            for (;;) {
              job = await ctx.api.get<Job>(`/api/v1/jobs/${created.job_id}`);
              for (const event of await follower.poll()) progress.event(event);
              progress.state(job.state);
              if (job.state === 'RUNNING' || TERMINAL.has(job.state) || Date.now() > deadline) break;
              await sleep(500);
            }
          } finally {
            progress.stop();
          }
          if (job.state !== 'RUNNING') {
            const timedOut = !TERMINAL.has(job.state);
            throw new CliError(
              EXIT.jobFailed,
              timedOut ? 'JOB_WAIT_TIMEOUT' : 'JOB_NOT_RUNNING',
              timedOut ? `job ${job.job_id} is still ${job.state} after ${options.timeout}` : `job ${job.job_id} ended ${job.state}`,
              { job_id: job.job_id, state: job.state, ...(job.close_reason === undefined ? {} : { close_reason: job.close_reason }) },
            );
          }
          ctx.out.result({ quote, job }, () => {
            showJob(ctx, job);
            ctx.out.note(`Running. Open a shell with: ark ssh ${job.job_id}`);
          });
        },
      ),
    );

  jobs
    .command('list', { isDefault: true })
    .description('Your jobs, newest first')
    .option('--state <state>', 'only jobs in this state (RUNNING, CLOSED, ...)')
    .option('--limit <n>', 'at most this many', '50')
    .action(
      action(async (ctx, options: { state?: string; limit: string }) => {
        const items = await ctx.api.all<Job>('/api/v1/jobs', {
          query: { state: options.state?.toUpperCase() },
          max: positiveInteger(options.limit, '--limit'),
        });
        ctx.out.result({ items }, () =>
          ctx.out.table(
            ['JOB', 'STATE', 'GPU', 'RATE USDC/h', 'CHARGED USDC', 'FUNDED THROUGH'],
            items.map((j) => [
              j.job_id,
              j.state,
              j.gpu_model === undefined ? '-' : `${j.gpu_count ?? 1} x ${j.gpu_model}`,
              j.rate_micro_per_hour === undefined ? '-' : formatUsdc(j.rate_micro_per_hour),
              formatUsdc(j.cumulative_charge_micro),
              j.funded_through,
            ]),
          ),
        );
      }),
    );

  jobs
    .command('show <job-id>')
    .description('One job: state, charge, funding')
    .action(
      action(async (ctx, jobId: string) => {
        const job = await ctx.api.get<Job>(`/api/v1/jobs/${encodeURIComponent(jobId)}`);
        ctx.out.result(job, () => showJob(ctx, job));
      }),
    );

  jobs
    .command('stop <job-id>')
    .description('Stop a job (the meter stops when the machine confirms; the unspent budget returns then)')
    .option('--reason <reason>', 'why', 'stopped with the ark CLI')
    .option('--wait', 'wait until the machine confirmed the stop (STOPPED) and the unspent budget is back in the balance')
    .option('--timeout <duration>', 'how long to wait with --wait', '2m')
    .action(
      action(async (ctx, jobId: string, options: { reason: string; wait?: boolean; timeout: string }) => {
        const stopped = await ctx.api.post<{ job_id: string; state: string }>(
          `/api/v1/jobs/${encodeURIComponent(jobId)}/stop`,
          { reason: options.reason },
          { idempotent: true },
        );
        let job: Job | undefined;
        if (options.wait) {
          const deadline = Date.now() + durationToSeconds(options.timeout, '--timeout') * 1000;
          const progress = await jobProgress(process.stderr, !ctx.out.json && process.stderr.isTTY !== true);
          for (;;) {
            job = await ctx.api.get<Job>(`/api/v1/jobs/${encodeURIComponent(jobId)}`);
            progress.state(job.state);
            // STOPPED releases the hold in the same transaction; the retrieval window after it holds files, not money.
            if (TERMINAL.has(job.state)) break;
            if (Date.now() > deadline) throw new CliError(EXIT.jobFailed, 'JOB_WAIT_TIMEOUT', `job ${jobId} is still ${job.state}`);
            await sleep(500);
          }
        }
        const released = job !== undefined && !ctx.out.json ? await releasedMicro(ctx.api, jobId) : null;
        ctx.out.result(job ?? stopped, () => {
          if (job === undefined) return ctx.out.line(`Job ${jobId}: ${stopped.state}`);
          showJob(ctx, job);
          if (released !== null) ctx.out.line(`Unspent budget returned to your balance: ${formatUsdc(released)} USDC`);
        });
      }),
    );

  jobs
    .command('extend <job-id>')
    .description('Add budget (and time) to a running job; keeps its rate')
    .requiredOption('--add <usdc>', 'budget to add, in USDC')
    .option('--duration <duration>', 'new duration limit (default: the current one plus what the added budget buys at the job’s rate)')
    .action(
      action(async (ctx, jobId: string, options: { add: string; duration?: string }) => {
        const added = usdcToMicro(options.add, '--add');
        const job = await ctx.api.get<Job & { duration_limit_s?: number }>(`/api/v1/jobs/${encodeURIComponent(jobId)}`);
        let duration: number;
        if (options.duration !== undefined) duration = durationToSeconds(options.duration, '--duration');
        else {
          if (job.duration_limit_s === undefined || job.rate_micro_per_hour === undefined) throw usageError('give --duration');
          const rate = BigInt(job.rate_micro_per_hour);
          duration = job.duration_limit_s + (rate === 0n ? 0 : Number((added * 3600n) / rate));
        }
        const extended = await ctx.api.post<{ job_id: string; budget_version: string; funded_budget_micro: string }>(
          `/api/v1/jobs/${encodeURIComponent(jobId)}/budget-extension`,
          {
            additional_budget_micro: added.toString(),
            new_duration_limit_s: duration,
            expected_job_version: job.job_version,
            expected_budget_version: job.budget_version,
          },
          { idempotent: true },
        );
        ctx.out.result({ ...extended, new_duration_limit_s: duration }, () =>
          ctx.out.line(`Job ${jobId}: budget now ${formatUsdc(extended.funded_budget_micro)} USDC, duration limit ${duration} s`),
        );
      }),
    );

  jobs
    .command('logs <job-id>')
    .description(
      'The job’s output: the last lines its container wrote to stdout (here on stdout) and stderr (here on stderr), the job’s secret ' +
        'values redacted; -f keeps printing new lines as they are written (NDJSON with --json)',
    )
    .option('-f, --follow', 'keep printing new lines until the container ends (reconnects, resuming after the last line printed)')
    .option('--tail <n>', `lines to show first (at most ${LOG_TAIL_MAX})`, '100')
    .option('-t, --timestamps', 'prefix each line with the time the container wrote it')
    .option('--retry-for <duration>', 'with --follow, how long to keep reconnecting to an unreachable or busy server', '10m')
    .action(
      action(async (ctx, jobId: string, options: { follow?: boolean; tail: string; timestamps?: boolean; retryFor: string }) => {
        if (!/^(0|[1-9][0-9]*)$/.test(options.tail) || Number(options.tail) > LOG_TAIL_MAX) {
          throw usageError(`--tail is a number of lines from 0 to ${LOG_TAIL_MAX}, like --tail 50 (got "${options.tail}").`);
        }
        const tail = Number(options.tail);
        const print = (line: JobLogLine) => {
          if (ctx.out.json) return ctx.out.line(JSON.stringify(line));
          const text = options.timestamps ? `${line.at} ${line.text}` : line.text;
          if (line.stream === 'stdout') ctx.out.line(text);
          else if (line.stream === 'stderr') ctx.out.stderr.write(`${text}\n`);
          else ctx.out.warn(`[ark] ${text}`);
        };
        if (options.follow) return followLogs(ctx, jobId, tail, durationToSeconds(options.retryFor, '--retry-for') * 1000, print);
        const logs = await ctx.api.get<{ lines: JobLogLine[]; cursor: string | null }>(`/api/v1/jobs/${encodeURIComponent(jobId)}/logs`, {
          query: { tail },
        });
        logs.lines.forEach(print);
        return undefined;
      }),
    );

  jobs
    .command('events <job-id>')
    .description('The job’s events; --follow keeps printing new ones until the job ends (NDJSON with --json)')
    .option('-f, --follow', 'keep following until the job is CLOSED or FAILED')
    .option('--interval <duration>', 'poll interval with --follow', '1s')
    .option('--retry-for <duration>', 'with --follow, how long to keep reconnecting to an unreachable or busy server', '10m')
    .action(
      action(async (ctx, jobId: string, options: { follow?: boolean; interval: string; retryFor: string }) => {
        const follower = new EventFollower(ctx.api, jobId);
        const print = (event: JobEvent) =>
          ctx.out.json ? ctx.out.line(JSON.stringify(event)) : ctx.out.line(`${event.at}  #${event.seq}  ${event.kind}: ${event.message}`);
        if (!options.follow) {
          const items = await follower.poll();
          ctx.out.result({ items }, () => items.forEach(print));
          return;
        }
        const intervalMs = durationToSeconds(options.interval, '--interval') * 1000;
        return followEvents(ctx, follower, jobId, intervalMs, durationToSeconds(options.retryFor, '--retry-for') * 1000, print);
      }),
    );
}
