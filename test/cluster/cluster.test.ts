// The cluster bank test's short form (issue 26): three replicas behind HAProxy on a private PostgreSQL, one real
// agent, two deposit-funded renters, every fault kind once on a seeded schedule (ARK_CLUSTER_SEED replays one), then
// every invariant. The long form is `pnpm bench cluster` (test/bench/cluster.bench.ts).
import { describe, expect, it } from 'vitest';
import { isDockerAvailable } from '../harness/dockerd.js';
import { runCommand } from '../harness/processes.js';
import { runBank } from './bank.js';
import { isPrivatePostgresAvailable } from './postgres-instance.js';

const installed = (command: string) =>
  runCommand(command, ['-v']).then(
    () => true,
    () => false,
  );
const [haproxyInstalled, redisInstalled] = await Promise.all([installed('haproxy'), installed('redis-server')]);

// As with Docker (harness/dockerd.ts): skipped on a machine without the parts, a failure in CI, where .ci/setup
// installs haproxy and runs redis-server, and the PostgreSQL server binaries are on every machine of this kind.
const missing = [
  !haproxyInstalled && 'haproxy (Debian package haproxy)',
  // The cluster's private Redis (redis-instance.ts): the binary .ci/setup runs as the machine's.
  !redisInstalled && 'redis-server (Debian package redis-server)',
  !isPrivatePostgresAvailable() && 'PostgreSQL server binaries',
].filter((m): m is string => typeof m === 'string');
const inCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
if (inCi && missing.length > 0)
  throw new Error(`the cluster test cannot run in CI without ${missing.join(' and ')}; .ci/setup installs them`);

describe.skipIf(!isDockerAvailable() || missing.length > 0)('the cluster under faults', () => {
  it('keeps every promise through a kill -9, a SIGSTOP, a PostgreSQL restart, cut agent channels and a kill mid-request', async () => {
    const seed = process.env.ARK_CLUSTER_SEED === undefined ? undefined : Number(process.env.ARK_CLUSTER_SEED);
    const report = await runBank({ seed, rounds: 1, renters: 2 });
    expect(report.faults.map((f) => f.kind).sort()).toEqual(['agent-cut', 'kill', 'kill-mid-request', 'pause', 'postgres-restart']);
    const broken = report.invariants.filter((i) => !i.ok);
    expect(broken, `seed ${report.seed}: ${broken.map((i) => `${i.name}: ${i.detail}`).join('\n')}`).toEqual([]);
    expect(report.jobs).toBeGreaterThan(0);
  }, 360_000);
});
