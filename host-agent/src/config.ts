import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * The agent's configuration: a JSON file (ARK_AGENT_CONFIG, default /etc/ark-agent/config.json) plus
 * environment overrides, validated once at start. main.ts passes the environment in; nothing below reads it.
 */

export const DEFAULT_CONFIG_PATH = '/etc/ark-agent/config.json';
export const DEFAULT_STATE_DIR = '/var/lib/ark-agent';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const GIB = 1024 ** 3;

// `problem` is our own schema keyword: the sentence a host reads after the field name when the value is refused.
const integer = (minimum: number, maximum: number, unit = '') =>
  Type.Integer({ minimum, maximum, problem: `must be an integer${unit} between ${minimum} and ${maximum}` });
const text = (maxLength: number, what = 'a string') =>
  Type.String({ minLength: 1, maxLength, problem: `must be ${what} of 1 to ${maxLength} characters` });
const port = () => integer(1, 65535);

export const AgentConfigFile = Type.Object(
  {
    control_plane_url: Type.Optional(
      Type.String({
        maxLength: 2048,
        pattern: '^https?://[^\\s/?#]+[^\\s]*$',
        problem: 'must be an http(s) URL, e.g. https://ark.example.com',
      }),
    ),
    heartbeat_interval_s: Type.Optional(integer(1, 300, ' (seconds)')),
    telemetry_sample_interval_s: Type.Optional(integer(1, 3600, ' (seconds)')),
    telemetry_batch_interval_s: Type.Optional(integer(1, 3600, ' (seconds)')),
    /** Samples kept while they wait for the next batch; the oldest are dropped beyond it. */
    telemetry_buffer_samples: Type.Optional(integer(10, 10_000)),
    nettest: Type.Optional(
      Type.Object(
        {
          max_download_bytes: Type.Optional(integer(1, GIB)),
          max_upload_bytes: Type.Optional(integer(1, GIB)),
          ping_count: Type.Optional(integer(1, 20)),
        },
        { additionalProperties: false, problem: 'must be an object with max_download_bytes, max_upload_bytes, ping_count' },
      ),
    ),
    docker_socket_path: Type.Optional(text(4096, 'a path')),
    /** A host without a reachable Docker engine cannot run jobs, so by default it reports itself unhealthy. */
    require_docker: Type.Optional(Type.Boolean({ problem: 'must be true or false' })),
    job_port_range: Type.Optional(
      Type.Object({ from: port(), to: port() }, { additionalProperties: false, problem: 'must be an object {from, to} of ports' }),
    ),
    /** `bridge` publishes job ports from job_port_range; `host` shares the host's network (where no bridge exists, e.g. tests). */
    job_network_mode: Type.Optional(Type.Union([Type.Literal('bridge'), Type.Literal('host')], { problem: 'must be "bridge" or "host"' })),
    /** A user-defined Docker network jobs attach to instead of the engine's default bridge (bridge mode only). */
    job_network: Type.Optional(text(255, 'a Docker network name')),
    /**
     * What the agent keeps back for itself, Docker and the host: each job's container may use the machine's CPUs and
     * memory less this (host-agent/README.md "What a job may use").
     */
    job_reserve: Type.Optional(
      Type.Object(
        {
          cpus: Type.Optional(Type.Number({ minimum: 0, maximum: 4096, problem: 'must be a number of CPUs between 0 and 4096' })),
          memory_bytes: Type.Optional(integer(0, 64 * 1024 * GIB, ' (bytes)')),
        },
        { additionalProperties: false, problem: 'must be an object with cpus, memory_bytes' },
      ),
    ),
    /** Ceilings on what one job may use, below what the reserve leaves (a host renting out part of a machine). */
    job_limits: Type.Optional(
      Type.Object(
        {
          cpus: Type.Optional(Type.Number({ minimum: 0.01, maximum: 4096, problem: 'must be a number of CPUs between 0.01 and 4096' })),
          memory_bytes: Type.Optional(integer(64 * 1024 * 1024, 64 * 1024 * GIB, ' (bytes)')),
          pids: Type.Optional(integer(16, 4_194_304)),
        },
        { additionalProperties: false, problem: 'must be an object with cpus, memory_bytes, pids' },
      ),
    ),
    /**
     * The OCI runtime for job containers: `auto` (the default) takes gVisor (runsc) or Kata when the engine has one,
     * `default` always the engine's default (runc), any other value that runtime by name.
     */
    job_runtime: Type.Optional(text(64, 'auto, default or a runtime name')),
    /** How often a running job's processes and egress are read (its disk less often: job_disk_check_interval_s). */
    job_check_interval_s: Type.Optional(integer(1, 3600, ' (seconds)')),
    job_disk_check_interval_s: Type.Optional(integer(1, 86_400, ' (seconds)')),
    /** The most bytes of one job's output kept on disk, rotated in two halves (issue 25 item 2). */
    job_log_max_bytes: Type.Optional(integer(64 * 1024, 1024 * 1024 * 1024, ' (bytes)')),
    /** The bytes per second one job's logs may push through the channel; followed lines past it are dropped. */
    job_log_rate_bytes_per_s: Type.Optional(integer(1024, 100 * 1024 * 1024, ' (bytes per second)')),
    /** Address the per-job SSH listeners bind to. */
    ssh_bind_host: Type.Optional(text(253, 'an address')),
    /** Address job ports are published on with bridge networking. */
    publish_host: Type.Optional(text(253, 'an address')),
    /** The address renters reach this machine at, reported with each job's access (else the control plane's own). */
    public_host: Type.Optional(text(253, 'a host name or address')),
    nvidia_smi_path: Type.Optional(text(4096, 'a path')),
    /**
     * The self-test's benchmark image, pinned by digest (`name@sha256:<64 hex>`): `ark-agent selftest` runs it; a
     * run_selftest command may name its own. The agent never runs a benchmark image that does not carry the digest.
     */
    selftest_benchmark_image: Type.Optional(
      Type.String({
        maxLength: 512,
        pattern: '^[^\\s@]+@sha256:[0-9a-f]{64}$',
        problem: 'must be an image named by digest, e.g. registry.example.com/ark/selftest@sha256:<64 hex>',
      }),
    ),
    /** Bound on a whole `ark-agent selftest` run (a run_selftest command carries its own). */
    selftest_timeout_s: Type.Optional(integer(10, 1800, ' (seconds)')),
    /** Tests only: replay recorded `nvidia-smi -q -x` documents (comma-separated paths) instead of running nvidia-smi. */
    nvidia_smi_fixture: Type.Optional(text(16384, 'a comma-separated list of paths')),
    /** Below this much free disk in the state directory's filesystem the agent reports itself unhealthy. */
    min_disk_free_bytes: Type.Optional(integer(0, 1024 * GIB)),
    region: Type.Optional(text(64)),
    /** host:port of the agent's own Prometheus endpoint (GET /metrics); absent: no endpoint, prom-client never loaded. */
    metrics_listen: Type.Optional(
      Type.String({ minLength: 1, maxLength: 300, problem: 'must be host:port, e.g. 127.0.0.1:9464 or [::1]:9464' }),
    ),
    /** The metrics endpoint is for a scraper on this machine; another address needs this set to true. */
    metrics_allow_non_loopback: Type.Optional(Type.Boolean({ problem: 'must be true or false' })),
    log_level: Type.Optional(
      Type.Union(
        LOG_LEVELS.map((level) => Type.Literal(level)),
        { problem: `must be one of ${LOG_LEVELS.join(', ')}` },
      ),
    ),
  },
  { additionalProperties: false, problem: 'must be a JSON object' },
);
export type AgentConfigFile = Static<typeof AgentConfigFile>;

export interface AgentConfig {
  /** Where the config came from, for messages; null when no file was read. */
  configPath: string | null;
  stateDir: string;
  controlPlaneUrl: string | null;
  heartbeatIntervalMs: number;
  telemetrySampleIntervalMs: number;
  telemetryBatchIntervalMs: number;
  telemetryBufferSamples: number;
  nettest: { maxDownloadBytes: number; maxUploadBytes: number; pingCount: number };
  docker: { socketPath: string; required: boolean };
  jobPortRange: { from: number; to: number };
  jobs: {
    networkMode: 'bridge' | 'host';
    /** A user-defined network instead of the default bridge; null: the default. */
    network: string | null;
    sshBindHost: string;
    publishHost: string;
    publicHost: string | null;
    /** Kept back from jobs for the agent, Docker and the host. */
    reserve: { cpus: number; memoryBytes: bigint };
    /** Ceilings on one job's share; pids always has one. */
    ceilings: { cpus: number | null; memoryBytes: bigint | null; pids: number };
    runtime: string;
    checkIntervalMs: number;
    diskCheckIntervalMs: number;
    /** Job logs: kept per job on disk, and pushed through the channel per second (jobs/job-logs.ts). */
    logMaxBytes: number;
    logRateBytesPerS: number;
  };
  nvidiaSmiPath: string;
  /** `ark-agent selftest` and the daemon's self-tests. */
  selftest: { benchmarkImage: string | null; timeoutMs: number };
  /** Tests only. */
  nvidiaSmiFixtures: string[] | null;
  minDiskFreeBytes: number;
  region: string | null;
  logLevel: LogLevel;
  /** The agent's Prometheus endpoint; null (the default) when none is configured. */
  metrics: { host: string; port: number } | null;
}

export const CONFIG_DEFAULTS = {
  heartbeat_interval_s: 15,
  telemetry_sample_interval_s: 10,
  telemetry_batch_interval_s: 60,
  telemetry_buffer_samples: 360,
  nettest: { max_download_bytes: 256 * 1024 * 1024, max_upload_bytes: 64 * 1024 * 1024, ping_count: 5 },
  docker_socket_path: '/var/run/docker.sock',
  require_docker: true,
  // Below Linux's ephemeral range (32768-60999), so outgoing connections never take a job's port.
  job_port_range: { from: 20000, to: 29999 },
  job_network_mode: 'bridge',
  ssh_bind_host: '0.0.0.0',
  publish_host: '0.0.0.0',
  nvidia_smi_path: 'nvidia-smi',
  selftest_timeout_s: 300,
  min_disk_free_bytes: GIB,
  log_level: 'info',
  job_reserve: { cpus: 1, memory_bytes: 2 * GIB },
  job_pids: 4096,
  job_runtime: 'auto',
  job_check_interval_s: 10,
  job_disk_check_interval_s: 60,
  job_log_max_bytes: 16 * 1024 * 1024,
  job_log_rate_bytes_per_s: 256 * 1024,
} as const;

export class ConfigError extends Error {
  override name = 'ConfigError';
  /** `source` names the file or environment variable; `detail` is "<field> <problem>". */
  constructor(
    readonly source: string,
    readonly detail: string,
  ) {
    super(`config error in ${source}: ${detail}`);
  }
}

type Env = Record<string, string | undefined>;

type EnvKind = 'string' | 'integer' | 'boolean' | 'range' | 'log_level';
/** Environment overrides: variable, field path in the file, how the text is read. */
export const ENV_OVERRIDES: ReadonlyArray<{ name: string; path: readonly string[]; kind: EnvKind }> = [
  { name: 'ARK_CONTROL_PLANE_URL', path: ['control_plane_url'], kind: 'string' },
  { name: 'ARK_AGENT_LOG_LEVEL', path: ['log_level'], kind: 'log_level' },
  { name: 'ARK_AGENT_HEARTBEAT_INTERVAL_S', path: ['heartbeat_interval_s'], kind: 'integer' },
  { name: 'ARK_AGENT_TELEMETRY_SAMPLE_INTERVAL_S', path: ['telemetry_sample_interval_s'], kind: 'integer' },
  { name: 'ARK_AGENT_TELEMETRY_BATCH_INTERVAL_S', path: ['telemetry_batch_interval_s'], kind: 'integer' },
  { name: 'ARK_AGENT_TELEMETRY_BUFFER_SAMPLES', path: ['telemetry_buffer_samples'], kind: 'integer' },
  { name: 'ARK_AGENT_NETTEST_MAX_DOWNLOAD_BYTES', path: ['nettest', 'max_download_bytes'], kind: 'integer' },
  { name: 'ARK_AGENT_NETTEST_MAX_UPLOAD_BYTES', path: ['nettest', 'max_upload_bytes'], kind: 'integer' },
  { name: 'ARK_AGENT_DOCKER_SOCKET', path: ['docker_socket_path'], kind: 'string' },
  { name: 'ARK_AGENT_REQUIRE_DOCKER', path: ['require_docker'], kind: 'boolean' },
  { name: 'ARK_AGENT_JOB_PORT_RANGE', path: ['job_port_range'], kind: 'range' },
  { name: 'ARK_AGENT_JOB_NETWORK_MODE', path: ['job_network_mode'], kind: 'string' },
  { name: 'ARK_AGENT_JOB_NETWORK', path: ['job_network'], kind: 'string' },
  { name: 'ARK_AGENT_JOB_RUNTIME', path: ['job_runtime'], kind: 'string' },
  { name: 'ARK_AGENT_SSH_BIND_HOST', path: ['ssh_bind_host'], kind: 'string' },
  { name: 'ARK_AGENT_PUBLISH_HOST', path: ['publish_host'], kind: 'string' },
  { name: 'ARK_AGENT_PUBLIC_HOST', path: ['public_host'], kind: 'string' },
  { name: 'ARK_AGENT_JOB_LOG_MAX_BYTES', path: ['job_log_max_bytes'], kind: 'integer' },
  { name: 'ARK_AGENT_JOB_LOG_RATE_BYTES_PER_S', path: ['job_log_rate_bytes_per_s'], kind: 'integer' },
  { name: 'ARK_AGENT_NVIDIA_SMI_PATH', path: ['nvidia_smi_path'], kind: 'string' },
  { name: 'ARK_AGENT_SELFTEST_BENCHMARK_IMAGE', path: ['selftest_benchmark_image'], kind: 'string' },
  { name: 'ARK_AGENT_SELFTEST_TIMEOUT_S', path: ['selftest_timeout_s'], kind: 'integer' },
  { name: 'ARK_AGENT_NVIDIA_SMI_FIXTURE', path: ['nvidia_smi_fixture'], kind: 'string' },
  { name: 'ARK_AGENT_MIN_DISK_FREE_BYTES', path: ['min_disk_free_bytes'], kind: 'integer' },
  { name: 'ARK_AGENT_REGION', path: ['region'], kind: 'string' },
  { name: 'ARK_AGENT_METRICS_LISTEN', path: ['metrics_listen'], kind: 'string' },
  { name: 'ARK_AGENT_METRICS_ALLOW_NON_LOOPBACK', path: ['metrics_allow_non_loopback'], kind: 'boolean' },
];

export interface LoadConfigOptions {
  env: Env;
  /** Reads the config file; defaults to the file system. Answers null when the file does not exist. */
  readFile?: (path: string) => string | null;
}

/** Parses and validates the whole configuration; throws ConfigError naming the file or variable at fault. */
/**
 * The engine socket Docker's own clients would use: DOCKER_HOST=unix:///run/user/1000/docker.sock (rootless Docker,
 * Podman's socket) names it; docker_socket_path and ARK_AGENT_DOCKER_SOCKET still win. A tcp:// or ssh:// engine is
 * refused: the agent publishes job ports and mounts volumes on this machine, so its engine must run here.
 */
function dockerHostSocket(dockerHost: string | undefined): string | undefined {
  if (dockerHost === undefined || dockerHost === '') return undefined;
  if (dockerHost.startsWith('unix://') && dockerHost.length > 'unix://'.length) return dockerHost.slice('unix://'.length);
  throw new ConfigError(
    'environment variable DOCKER_HOST',
    `"${dockerHost.slice(0, 100)}" is not a unix:// socket; the agent drives the engine on this machine only (set docker_socket_path, or unset DOCKER_HOST)`,
  );
}

export function loadAgentConfig(options: LoadConfigOptions): AgentConfig {
  const { env } = options;
  const readFile = options.readFile ?? readTextFileOrNull;
  const stateDir = resolve(env.ARK_AGENT_STATE_DIR || DEFAULT_STATE_DIR);

  const explicitPath = env.ARK_AGENT_CONFIG || undefined;
  const configPath = resolve(explicitPath ?? DEFAULT_CONFIG_PATH);
  let raw: string | null;
  try {
    raw = readFile(configPath);
  } catch (error) {
    throw new ConfigError(configPath, `cannot be read: ${(error as Error).message}`);
  }
  // The default path is optional; a path the host named must exist.
  if (raw === null && explicitPath !== undefined) throw new ConfigError(configPath, 'file does not exist (named by ARK_AGENT_CONFIG)');

  let file: Record<string, unknown> = {};
  if (raw !== null) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (error) {
      throw new ConfigError(configPath, `is not valid JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new ConfigError(configPath, 'must hold a JSON object');
    file = parsed as Record<string, unknown>;
  }

  // Which environment variable set which field, so an error names the variable rather than the file.
  const fromEnv = new Map<string, string>();
  const merged: Record<string, unknown> = structuredClone(file);
  for (const override of ENV_OVERRIDES) {
    const value = env[override.name];
    if (value === undefined || value === '') continue;
    setPath(merged, override.path, parseEnvValue(override.name, override.path.join('.'), override.kind, value));
    fromEnv.set(override.path.join('.'), override.name);
  }

  validate(AgentConfigFile, merged, (field) => {
    for (const [path, name] of fromEnv) if (field === path || field.startsWith(`${path}.`)) return `environment variable ${name}`;
    return configPath;
  });
  const valid = merged as AgentConfigFile;

  const range = valid.job_port_range ?? CONFIG_DEFAULTS.job_port_range;
  if (range.from > range.to) {
    const source = fromEnv.has('job_port_range') ? 'environment variable ARK_AGENT_JOB_PORT_RANGE' : configPath;
    throw new ConfigError(source, `job_port_range.from (${range.from}) must not be above job_port_range.to (${range.to})`);
  }
  const nettest = { ...CONFIG_DEFAULTS.nettest, ...valid.nettest };
  const metrics =
    valid.metrics_listen === undefined
      ? null
      : parseMetricsListen(valid.metrics_listen, valid.metrics_allow_non_loopback ?? false, (field) =>
          fromEnv.has(field) ? `environment variable ${fromEnv.get(field)}` : configPath,
        );
  return {
    configPath: raw === null ? null : configPath,
    stateDir,
    controlPlaneUrl: valid.control_plane_url?.replace(/\/+$/, '') ?? null,
    heartbeatIntervalMs: (valid.heartbeat_interval_s ?? CONFIG_DEFAULTS.heartbeat_interval_s) * 1000,
    telemetrySampleIntervalMs: (valid.telemetry_sample_interval_s ?? CONFIG_DEFAULTS.telemetry_sample_interval_s) * 1000,
    telemetryBatchIntervalMs: (valid.telemetry_batch_interval_s ?? CONFIG_DEFAULTS.telemetry_batch_interval_s) * 1000,
    telemetryBufferSamples: valid.telemetry_buffer_samples ?? CONFIG_DEFAULTS.telemetry_buffer_samples,
    nettest: { maxDownloadBytes: nettest.max_download_bytes, maxUploadBytes: nettest.max_upload_bytes, pingCount: nettest.ping_count },
    docker: {
      socketPath: valid.docker_socket_path ?? dockerHostSocket(env.DOCKER_HOST) ?? CONFIG_DEFAULTS.docker_socket_path,
      required: valid.require_docker ?? CONFIG_DEFAULTS.require_docker,
    },
    jobPortRange: { from: range.from, to: range.to },
    jobs: {
      networkMode: valid.job_network_mode ?? CONFIG_DEFAULTS.job_network_mode,
      network: valid.job_network ?? null,
      sshBindHost: valid.ssh_bind_host ?? CONFIG_DEFAULTS.ssh_bind_host,
      publishHost: valid.publish_host ?? CONFIG_DEFAULTS.publish_host,
      publicHost: valid.public_host ?? null,
      reserve: {
        cpus: valid.job_reserve?.cpus ?? CONFIG_DEFAULTS.job_reserve.cpus,
        memoryBytes: BigInt(valid.job_reserve?.memory_bytes ?? CONFIG_DEFAULTS.job_reserve.memory_bytes),
      },
      ceilings: {
        cpus: valid.job_limits?.cpus ?? null,
        memoryBytes: valid.job_limits?.memory_bytes === undefined ? null : BigInt(valid.job_limits.memory_bytes),
        pids: valid.job_limits?.pids ?? CONFIG_DEFAULTS.job_pids,
      },
      runtime: valid.job_runtime ?? CONFIG_DEFAULTS.job_runtime,
      checkIntervalMs: (valid.job_check_interval_s ?? CONFIG_DEFAULTS.job_check_interval_s) * 1000,
      diskCheckIntervalMs: (valid.job_disk_check_interval_s ?? CONFIG_DEFAULTS.job_disk_check_interval_s) * 1000,
      logMaxBytes: valid.job_log_max_bytes ?? CONFIG_DEFAULTS.job_log_max_bytes,
      logRateBytesPerS: valid.job_log_rate_bytes_per_s ?? CONFIG_DEFAULTS.job_log_rate_bytes_per_s,
    },
    nvidiaSmiPath: valid.nvidia_smi_path ?? CONFIG_DEFAULTS.nvidia_smi_path,
    selftest: {
      benchmarkImage: valid.selftest_benchmark_image ?? null,
      timeoutMs: (valid.selftest_timeout_s ?? CONFIG_DEFAULTS.selftest_timeout_s) * 1000,
    },
    nvidiaSmiFixtures:
      valid.nvidia_smi_fixture === undefined
        ? null
        : valid.nvidia_smi_fixture
            .split(',')
            .map((path) => path.trim())
            .filter((path) => path !== ''),
    minDiskFreeBytes: valid.min_disk_free_bytes ?? CONFIG_DEFAULTS.min_disk_free_bytes,
    region: valid.region ?? null,
    logLevel: valid.log_level ?? CONFIG_DEFAULTS.log_level,
    metrics,
  };
}

/** Whether an address names this machine only: 127.0.0.0/8, ::1 (or 127.x mapped into IPv6), or localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(bare);
  return false;
}

function parseMetricsListen(value: string, allowNonLoopback: boolean, sourceOf: (field: string) => string): { host: string; port: number } {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]]+)):(\d{1,5})$/.exec(value.trim());
  const port = Number(match?.[3]);
  const host = match?.[1] ?? match?.[2];
  if (match === null || host === undefined || !(port >= 1 && port <= 65535)) {
    throw new ConfigError(
      sourceOf('metrics_listen'),
      `metrics_listen must be host:port, e.g. 127.0.0.1:9464 or [::1]:9464, got "${value}"`,
    );
  }
  if (!isLoopbackHost(host) && !allowNonLoopback) {
    throw new ConfigError(
      sourceOf('metrics_listen'),
      `metrics_listen ${value} is not a loopback address: the endpoint has no authentication, so it listens on this machine only unless metrics_allow_non_loopback (ARK_AGENT_METRICS_ALLOW_NON_LOOPBACK) is true`,
    );
  }
  return { host, port };
}

function readTextFileOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1] as string] = value;
}

function parseEnvValue(name: string, field: string, kind: EnvKind, value: string): unknown {
  const source = `environment variable ${name}`;
  switch (kind) {
    case 'string':
    case 'log_level':
      return value;
    case 'integer':
      if (!/^\d+$/.test(value.trim())) throw new ConfigError(source, `${field} must be a whole number, got "${value}"`);
      return Number(value.trim());
    case 'boolean': {
      const lower = value.trim().toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(lower)) return true;
      if (['0', 'false', 'no', 'off'].includes(lower)) return false;
      throw new ConfigError(source, `${field} must be true or false, got "${value}"`);
    }
    case 'range': {
      const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(value);
      if (match === null) throw new ConfigError(source, `${field} must be a port range like 40000-49999, got "${value}"`);
      return { from: Number(match[1]), to: Number(match[2]) };
    }
  }
}

/** Throws a ConfigError for the first problem, phrased from the schema's `problem` sentences. */
function validate(schema: TSchema, value: unknown, sourceOf: (field: string) => string): void {
  const first = Value.Errors(schema, value).First();
  if (first === undefined) return;
  const field = first.path.replace(/^\//, '').split('/').join('.');
  const source = sourceOf(field);
  // An unknown key is most often a typo: say so and list what is known there.
  if (first.message === 'Unexpected property') {
    const parentPath = first.path.split('/').slice(1, -1);
    const parentSchema = parentPath.reduce<TSchema | undefined>(
      (node, key) => unwrap(node)?.properties?.[key] as TSchema | undefined,
      schema,
    );
    const known = Object.keys(unwrap(parentSchema)?.properties ?? {}).join(', ');
    throw new ConfigError(source, `unknown field ${field}${known ? ` (known fields: ${known})` : ''}`);
  }
  const problem = (first.schema as { problem?: string }).problem ?? first.message.toLowerCase();
  const got = describeValue(first.value);
  throw new ConfigError(source, `${field === '' ? 'the configuration' : field} ${problem}${got === undefined ? '' : `, got ${got}`}`);
}

function unwrap(schema: TSchema | undefined): { properties?: Record<string, TSchema> } | undefined {
  return schema as { properties?: Record<string, TSchema> } | undefined;
}

function describeValue(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const json = JSON.stringify(value);
  if (json === undefined) return undefined;
  return json.length > 80 ? `${json.slice(0, 77)}...` : json;
}
