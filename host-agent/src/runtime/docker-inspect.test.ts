import { describe, expect, it } from 'vitest';
import { containerStateFromInspect, containerUsageFromStats, engineIsolationFromInfo } from './docker-inspect.js';
import { recordedDockerAnswers } from './testing/recorded-container-runtime.js';

const answers = recordedDockerAnswers();

describe('what the confinement watch reads from the engine', () => {
  it("reads a running container's processes from a recorded stats answer; host networking gives no interface of its own", () => {
    const usage = containerUsageFromStats(answers.container_stats);
    expect(usage.pids).toBeGreaterThanOrEqual(1);
    expect(usage.memoryBytes).toBeGreaterThan(0);
    expect(usage).not.toHaveProperty('networkTxBytes');
  });

  it('sums what the container sent over all its interfaces, and leaves out what Docker does not say', () => {
    expect(
      containerUsageFromStats({
        pids_stats: { current: 7, limit: 64 },
        networks: { eth0: { rx_bytes: 10, tx_bytes: 4_000 }, eth1: { rx_bytes: 5, tx_bytes: 96 } },
      }),
    ).toEqual({ pids: 7, networkTxBytes: 4_096 });
    expect(containerUsageFromStats({})).toEqual({});
  });

  it('reads the runtimes and the security options of a recorded engine, and a remap or rootless engine', () => {
    expect(engineIsolationFromInfo(answers.engine_info)).toMatchObject({
      defaultRuntime: 'runc',
      userNamespaceRemap: false,
      rootless: false,
    });
    expect(engineIsolationFromInfo(answers.engine_info).runtimes).toContain('runc');
    expect(
      engineIsolationFromInfo({
        Runtimes: { runc: { path: 'runc' }, runsc: { path: '/usr/local/bin/runsc' } },
        DefaultRuntime: 'runc',
        SecurityOptions: ['name=apparmor', 'name=seccomp,profile=default', 'name=userns', 'name=rootless'],
      }),
    ).toEqual({ runtimes: ['runc', 'runsc'], defaultRuntime: 'runc', userNamespaceRemap: true, rootless: true });
  });

  it('says when the OOM killer ended a container, and nothing when it did not', () => {
    expect(containerStateFromInspect(answers.container_stopped)).not.toHaveProperty('oomKilled');
    const killed = structuredClone(answers.container_exited);
    killed.State.OOMKilled = true;
    expect(containerStateFromInspect(killed).oomKilled).toBe(true);
  });

  it('recorded a container created as the agent creates one: limits, no new privileges, a reduced capability set', () => {
    const hostConfig = (answers.container_running as unknown as { HostConfig: Record<string, unknown> }).HostConfig;
    expect(hostConfig).toMatchObject({ Privileged: false, SecurityOpt: ['no-new-privileges:true'], CapDrop: ['ALL'], PidsLimit: 256 });
  });
});
