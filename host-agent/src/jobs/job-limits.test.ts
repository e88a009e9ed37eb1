import { JobLimits } from '@ark/shared';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { EngineIsolation } from '../runtime/container-runtime.js';
import { chooseIsolation, containerLimitsOf, effectiveLimits, jobLimitsFor } from './job-limits.js';

const GIB = 1024n ** 3n;
const reserve = { cpus: 1, memoryBytes: 2n * GIB };
const noCeilings = { cpus: null, memoryBytes: null, pids: 4096 };

describe('jobLimitsFor', () => {
  it('gives a job the machine less the reserve: 16 cores and 64 GiB leave 15 CPUs and 62 GiB', () => {
    const limits = jobLimitsFor({ cpuCores: 16, ramBytes: 64n * GIB }, reserve, noCeilings);
    expect(limits).toEqual({ nano_cpus: 15_000_000_000, memory_bytes: String(62n * GIB), pids: 4096 });
    expect([...Value.Errors(JobLimits, limits)]).toEqual([]);
  });

  it('never gives less than half the machine: a 2-core, 3 GiB machine still runs a job of 1 CPU and 1.5 GiB', () => {
    expect(jobLimitsFor({ cpuCores: 2, ramBytes: 3n * GIB }, reserve, noCeilings)).toEqual({
      nano_cpus: 1_000_000_000,
      memory_bytes: String((3n * GIB) / 2n),
      pids: 4096,
    });
    // One core and a reserve of one: half a CPU.
    expect(jobLimitsFor({ cpuCores: 1, ramBytes: 8n * GIB }, reserve, noCeilings).nano_cpus).toBe(500_000_000);
  });

  it("keeps under the host's ceilings, and takes fractions of CPUs", () => {
    const limits = jobLimitsFor(
      { cpuCores: 64, ramBytes: 512n * GIB },
      { cpus: 2.5, memoryBytes: 16n * GIB },
      { cpus: 8.25, memoryBytes: 32n * GIB, pids: 512 },
    );
    expect(limits).toEqual({ nano_cpus: 8_250_000_000, memory_bytes: String(32n * GIB), pids: 512 });
    expect(jobLimitsFor({ cpuCores: 64, ramBytes: 512n * GIB }, { cpus: 2.5, memoryBytes: 16n * GIB }, noCeilings)).toMatchObject({
      nano_cpus: 61_500_000_000,
      memory_bytes: String(496n * GIB),
    });
  });

  it('has a floor of 64 MiB of memory, even on a machine whose memory is unknown', () => {
    expect(jobLimitsFor({ cpuCores: 4, ramBytes: 0n }, reserve, noCeilings).memory_bytes).toBe(String(64 * 1024 ** 2));
    expect(jobLimitsFor({ cpuCores: 4, ramBytes: 8n * GIB }, reserve, { ...noCeilings, memoryBytes: 1024n }).memory_bytes).toBe(
      String(64 * 1024 ** 2),
    );
  });

  it("becomes Docker's figures", () => {
    expect(containerLimitsOf({ nano_cpus: 1_500_000_000, memory_bytes: String(3n * GIB), pids: 256 })).toEqual({
      nanoCpus: 1_500_000_000,
      memoryBytes: 3 * 1024 ** 3,
      pids: 256,
    });
  });
});

describe('effectiveLimits', () => {
  const own = { nano_cpus: 15_000_000_000, memory_bytes: String(62n * GIB), pids: 4096 };

  it("takes the launch's figures where lower, and this agent's own where the launch asks for more", () => {
    expect(effectiveLimits(own, { nano_cpus: 20_000_000_000, memory_bytes: String(8n * GIB), pids: 10_000 })).toEqual({
      nano_cpus: 15_000_000_000,
      memory_bytes: String(8n * GIB),
      pids: 4096,
    });
  });

  it('applies its own when the launch announced none (a control plane older than confinement)', () => {
    expect(effectiveLimits(own, undefined)).toEqual(own);
  });
});

describe('chooseIsolation', () => {
  const engine = (runtimes: string[], extra: Partial<EngineIsolation> = {}): EngineIsolation => ({
    runtimes,
    defaultRuntime: 'runc',
    userNamespaceRemap: false,
    rootless: false,
    ...extra,
  });

  it('takes gVisor, else Kata, when the engine has one, and the default runtime otherwise', () => {
    expect(chooseIsolation('auto', engine(['io.containerd.runc.v2', 'kata-runtime', 'runc', 'runsc']))).toEqual({
      runtime: 'runsc',
      description: 'gvisor',
    });
    expect(chooseIsolation('auto', engine(['io.containerd.kata.v2', 'runc']))).toEqual({
      runtime: 'io.containerd.kata.v2',
      description: 'kata',
    });
    expect(chooseIsolation('auto', engine(['io.containerd.runc.v2', 'runc']))).toEqual({ description: 'runc' });
  });

  it('says when the engine remaps users into a namespace, whatever the runtime', () => {
    expect(chooseIsolation('auto', engine(['runc'], { userNamespaceRemap: true }))).toEqual({ description: 'runc+userns' });
    expect(chooseIsolation('auto', engine(['runc', 'runsc'], { userNamespaceRemap: true }))).toEqual({
      runtime: 'runsc',
      description: 'gvisor+userns',
    });
  });

  it('keeps the default on request, and refuses a named runtime the engine does not have', () => {
    expect(chooseIsolation('default', engine(['runc', 'runsc']))).toEqual({ description: 'runc' });
    expect(chooseIsolation('kata-fc', engine(['kata-fc', 'runc']))).toEqual({ runtime: 'kata-fc', description: 'kata' });
    expect(() => chooseIsolation('runsc', engine(['runc']))).toThrow(
      /job_runtime runsc is not registered with the Docker engine \(it has runc\)/,
    );
  });
});
