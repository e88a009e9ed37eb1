import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_STATE_DIR, loadAgentConfig } from './config.js';

function withFile(content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'ark-agent-config-'));
  const path = join(dir, 'config.json');
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

function errorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

// A default path that never exists, so tests do not read this machine's /etc.
const noFile = () => null;

describe('loadAgentConfig', () => {
  it('uses the documented defaults when there is no file and no environment', () => {
    const config = loadAgentConfig({ env: {}, readFile: noFile });
    expect(config).toMatchObject({
      configPath: null,
      stateDir: DEFAULT_STATE_DIR,
      controlPlaneUrl: null,
      heartbeatIntervalMs: 15_000,
      telemetrySampleIntervalMs: 10_000,
      telemetryBatchIntervalMs: 60_000,
      telemetryBufferSamples: 360,
      docker: { socketPath: '/var/run/docker.sock', required: true },
      jobPortRange: { from: 20000, to: 29999 },
      nvidiaSmiPath: 'nvidia-smi',
      nvidiaSmiFixtures: null,
      region: null,
      logLevel: 'info',
    });
  });

  it('takes the engine socket from DOCKER_HOST as Docker does, unless the agent is told one; refuses a remote engine', () => {
    expect(loadAgentConfig({ env: { DOCKER_HOST: 'unix:///run/user/1000/docker.sock' }, readFile: noFile }).docker.socketPath).toBe(
      '/run/user/1000/docker.sock',
    );
    expect(
      loadAgentConfig({
        env: { DOCKER_HOST: 'unix:///run/user/1000/docker.sock', ARK_AGENT_DOCKER_SOCKET: '/srv/docker.sock' },
        readFile: noFile,
      }).docker.socketPath,
    ).toBe('/srv/docker.sock');
    const remote = errorOf(() => loadAgentConfig({ env: { DOCKER_HOST: 'tcp://127.0.0.1:2375' }, readFile: noFile }));
    expect(remote.source).toBe('environment variable DOCKER_HOST');
    expect(remote.message).toContain('is not a unix:// socket');
  });

  it('reads the file named by ARK_AGENT_CONFIG and lets the environment override it', () => {
    const path = withFile({
      control_plane_url: 'https://ark.example.com/',
      heartbeat_interval_s: 20,
      nettest: { max_download_bytes: 1000 },
      job_port_range: { from: 50000, to: 50100 },
      region: 'eu-west',
      log_level: 'debug',
    });
    const config = loadAgentConfig({
      env: {
        ARK_AGENT_CONFIG: path,
        ARK_AGENT_STATE_DIR: '/tmp/agent-state',
        ARK_AGENT_HEARTBEAT_INTERVAL_S: '2',
        ARK_AGENT_LOG_LEVEL: 'warn',
        ARK_AGENT_REQUIRE_DOCKER: 'false',
        ARK_AGENT_NVIDIA_SMI_FIXTURE: '/a.xml, /b.xml',
      },
    });
    expect(config.configPath).toBe(path);
    expect(config.stateDir).toBe('/tmp/agent-state');
    // The trailing slash is dropped so paths join cleanly.
    expect(config.controlPlaneUrl).toBe('https://ark.example.com');
    expect(config.heartbeatIntervalMs).toBe(2000);
    expect(config.logLevel).toBe('warn');
    expect(config.docker.required).toBe(false);
    expect(config.nettest).toEqual({ maxDownloadBytes: 1000, maxUploadBytes: 64 * 1024 * 1024, pingCount: 5 });
    expect(config.jobPortRange).toEqual({ from: 50000, to: 50100 });
    expect(config.region).toBe('eu-west');
    expect(config.nvidiaSmiFixtures).toEqual(['/a.xml', '/b.xml']);
  });

  it('names the file and the field, in words, for a bad value in the file', () => {
    const path = withFile({ control_plane_url: 'ftp://ark.example.com' });
    const error = errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: path } }));
    expect(error.message).toBe(
      `config error in ${path}: control_plane_url must be an http(s) URL, e.g. https://ark.example.com, got "ftp://ark.example.com"`,
    );
  });

  it.each([
    [{ heartbeat_interval_s: 0 }, 'heartbeat_interval_s must be an integer (seconds) between 1 and 300, got 0'],
    [{ telemetry_sample_interval_s: 1.5 }, 'telemetry_sample_interval_s must be an integer (seconds) between 1 and 3600, got 1.5'],
    [{ telemetry_batch_interval_s: '60' }, 'telemetry_batch_interval_s must be an integer (seconds) between 1 and 3600, got "60"'],
    [{ nettest: { ping_count: 50 } }, 'nettest.ping_count must be an integer between 1 and 20, got 50'],
    [{ job_port_range: { from: 0, to: 10 } }, 'job_port_range.from must be an integer between 1 and 65535, got 0'],
    [{ require_docker: 'yes' }, 'require_docker must be true or false, got "yes"'],
    [{ log_level: 'loud' }, 'log_level must be one of fatal, error, warn, info, debug, trace, silent, got "loud"'],
    [{ region: '' }, 'region must be a string of 1 to 64 characters, got ""'],
  ])('refuses %j with a sentence naming the field', (content, detail) => {
    const path = withFile(content);
    const error = errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: path } }));
    expect(error.source).toBe(path);
    expect(error.detail).toBe(detail);
  });

  it('calls an unknown key a typo and lists the known fields', () => {
    const path = withFile({ heartbeat_interval: 15 });
    const error = errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: path } }));
    expect(error.detail).toMatch(/^unknown field heartbeat_interval \(known fields: control_plane_url, heartbeat_interval_s, /);
    const nested = errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: withFile({ nettest: { max_download: 1 } }) } }));
    expect(nested.detail).toBe('unknown field nettest.max_download (known fields: max_download_bytes, max_upload_bytes, ping_count)');
  });

  it('names the environment variable when the bad value came from it', () => {
    const error = errorOf(() => loadAgentConfig({ env: { ARK_CONTROL_PLANE_URL: 'not a url' }, readFile: noFile }));
    expect(error.message).toBe(
      'config error in environment variable ARK_CONTROL_PLANE_URL: control_plane_url must be an http(s) URL, e.g. https://ark.example.com, got "not a url"',
    );
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_HEARTBEAT_INTERVAL_S: '15s' }, readFile: noFile })).message).toBe(
      'config error in environment variable ARK_AGENT_HEARTBEAT_INTERVAL_S: heartbeat_interval_s must be a whole number, got "15s"',
    );
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_HEARTBEAT_INTERVAL_S: '900' }, readFile: noFile })).message).toBe(
      'config error in environment variable ARK_AGENT_HEARTBEAT_INTERVAL_S: heartbeat_interval_s must be an integer (seconds) between 1 and 300, got 900',
    );
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_REQUIRE_DOCKER: 'maybe' }, readFile: noFile })).detail).toBe(
      'require_docker must be true or false, got "maybe"',
    );
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_JOB_PORT_RANGE: '5000' }, readFile: noFile })).detail).toBe(
      'job_port_range must be a port range like 40000-49999, got "5000"',
    );
  });

  it('pins the self-test benchmark image by digest and bounds its run', () => {
    expect(loadAgentConfig({ env: {}, readFile: noFile }).selftest).toEqual({ benchmarkImage: null, timeoutMs: 300_000 });
    const image = `registry.example.com/ark/selftest@sha256:${'c'.repeat(64)}`;
    expect(
      loadAgentConfig({ env: { ARK_AGENT_SELFTEST_BENCHMARK_IMAGE: image, ARK_AGENT_SELFTEST_TIMEOUT_S: '60' }, readFile: noFile })
        .selftest,
    ).toEqual({ benchmarkImage: image, timeoutMs: 60_000 });
    expect(() =>
      loadAgentConfig({ env: { ARK_AGENT_SELFTEST_BENCHMARK_IMAGE: 'registry.example.com/ark/selftest:latest' }, readFile: noFile }),
    ).toThrow(/ARK_AGENT_SELFTEST_BENCHMARK_IMAGE: selftest_benchmark_image must be an image named by digest/);
    expect(() => loadAgentConfig({ env: { ARK_AGENT_SELFTEST_TIMEOUT_S: '5' }, readFile: noFile })).toThrow(
      /selftest_timeout_s must be an integer/,
    );
  });

  it('configures the job runtime: bridge networking on all addresses by default, host networking and addresses on request', () => {
    expect(loadAgentConfig({ env: {}, readFile: noFile }).jobs).toMatchObject({
      networkMode: 'bridge',
      network: null,
      sshBindHost: '0.0.0.0',
      publishHost: '0.0.0.0',
      publicHost: null,
    });
    const path = withFile({ job_network_mode: 'host', ssh_bind_host: '127.0.0.5', public_host: 'rig-7.example.net' });
    const config = loadAgentConfig({
      env: { ARK_AGENT_CONFIG: path, ARK_AGENT_SSH_BIND_HOST: '127.0.0.1', ARK_AGENT_PUBLISH_HOST: '127.0.0.1' },
    });
    expect(config.jobs).toMatchObject({
      networkMode: 'host',
      sshBindHost: '127.0.0.1',
      publishHost: '127.0.0.1',
      publicHost: 'rig-7.example.net',
    });
    expect(loadAgentConfig({ env: { ARK_AGENT_PUBLIC_HOST: '203.0.113.7' }, readFile: noFile }).jobs.publicHost).toBe('203.0.113.7');
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_JOB_NETWORK_MODE: 'none' }, readFile: noFile })).message).toBe(
      'config error in environment variable ARK_AGENT_JOB_NETWORK_MODE: job_network_mode must be "bridge" or "host", got "none"',
    );
  });

  it('keeps a reserve of 1 CPU and 2 GiB by default, 4096 processes per job, and takes the host own figures', () => {
    expect(loadAgentConfig({ env: {}, readFile: noFile }).jobs).toMatchObject({
      reserve: { cpus: 1, memoryBytes: 2n * 1024n ** 3n },
      ceilings: { cpus: null, memoryBytes: null, pids: 4096 },
      runtime: 'auto',
      checkIntervalMs: 10_000,
      diskCheckIntervalMs: 60_000,
    });
    const path = withFile({
      job_reserve: { cpus: 2.5, memory_bytes: 8 * 1024 ** 3 },
      job_limits: { cpus: 4, memory_bytes: 16 * 1024 ** 3, pids: 512 },
      job_runtime: 'runsc',
      job_network: 'ark-jobs',
      job_check_interval_s: 2,
      job_disk_check_interval_s: 30,
    });
    expect(loadAgentConfig({ env: { ARK_AGENT_CONFIG: path } }).jobs).toMatchObject({
      network: 'ark-jobs',
      reserve: { cpus: 2.5, memoryBytes: 8n * 1024n ** 3n },
      ceilings: { cpus: 4, memoryBytes: 16n * 1024n ** 3n, pids: 512 },
      runtime: 'runsc',
      checkIntervalMs: 2000,
      diskCheckIntervalMs: 30_000,
    });
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: withFile({ job_limits: { pids: 3 } }) } })).detail).toBe(
      'job_limits.pids must be an integer between 16 and 4194304, got 3',
    );
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: withFile({ job_reserve: { gpus: 1 } }) } })).detail).toMatch(
      /^unknown field job_reserve.gpus \(known fields: cpus, memory_bytes\)$/,
    );
  });

  it('refuses a port range whose start is above its end', () => {
    const error = errorOf(() => loadAgentConfig({ env: { ARK_AGENT_JOB_PORT_RANGE: '5000-4000' }, readFile: noFile }));
    expect(error.message).toBe(
      'config error in environment variable ARK_AGENT_JOB_PORT_RANGE: job_port_range.from (5000) must not be above job_port_range.to (4000)',
    );
  });

  it('refuses a missing file the host named, broken JSON and a non-object', () => {
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: '/nonexistent/ark.json' } })).message).toBe(
      'config error in /nonexistent/ark.json: file does not exist (named by ARK_AGENT_CONFIG)',
    );
    const broken = withFile('{"heartbeat_interval_s": 15,');
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: broken } })).message).toMatch(
      new RegExp(`^config error in ${broken}: is not valid JSON: `),
    );
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: withFile([1, 2]) } })).detail).toBe('must hold a JSON object');
  });

  it('has no metrics endpoint by default, and takes a loopback host:port from the file or the environment', () => {
    expect(loadAgentConfig({ env: {}, readFile: noFile }).metrics).toBeNull();
    const file = withFile({ metrics_listen: '127.0.0.1:9464' });
    expect(loadAgentConfig({ env: { ARK_AGENT_CONFIG: file } }).metrics).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(loadAgentConfig({ env: { ARK_AGENT_METRICS_LISTEN: '[::1]:9500' }, readFile: noFile }).metrics).toEqual({
      host: '::1',
      port: 9500,
    });
    expect(loadAgentConfig({ env: { ARK_AGENT_METRICS_LISTEN: 'localhost:9464' }, readFile: noFile }).metrics).toEqual({
      host: 'localhost',
      port: 9464,
    });
  });

  it('refuses a non-loopback metrics address unless metrics_allow_non_loopback is true, and a malformed one', () => {
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_METRICS_LISTEN: '192.0.2.5:9464' }, readFile: noFile })).message).toContain(
      'config error in environment variable ARK_AGENT_METRICS_LISTEN: metrics_listen 192.0.2.5:9464 is not a loopback address',
    );
    const file = withFile({ metrics_listen: '0.0.0.0:9464' });
    expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_CONFIG: file } })).source).toBe(file);
    expect(loadAgentConfig({ env: { ARK_AGENT_CONFIG: file, ARK_AGENT_METRICS_ALLOW_NON_LOOPBACK: 'true' } }).metrics).toEqual({
      host: '0.0.0.0',
      port: 9464,
    });
    expect(
      loadAgentConfig({ env: { ARK_AGENT_CONFIG: withFile({ metrics_listen: '[::]:9464', metrics_allow_non_loopback: true }) } }).metrics,
    ).toEqual({
      host: '::',
      port: 9464,
    });
    for (const bad of ['127.0.0.1', '127.0.0.1:0', '127.0.0.1:70000', ':9464', '::1:9464']) {
      expect(errorOf(() => loadAgentConfig({ env: { ARK_AGENT_METRICS_LISTEN: bad }, readFile: noFile })).detail).toMatch(
        /^metrics_listen must be host:port/,
      );
    }
  });
});
