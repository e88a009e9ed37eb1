// What one job's container may use, and how it is isolated, worked out from the machine, the host's reserve and
// what the engine offers. Pure: the agent's facts and configuration in, Docker's figures out. The same figures go
// into the manifest at enrollment (the offer shows them) and onto every job container the agent creates.
import type { JobLimits } from '@ark/shared';
import type { ContainerLimits, EngineIsolation } from '../runtime/container-runtime.js';

export const NANO_CPUS_PER_CPU = 1_000_000_000;
/** Docker refuses a memory limit under 6 MiB; a job needs far more to do anything, so this is the floor. */
export const JOB_MEMORY_BYTES_MIN = 64n * 1024n * 1024n;
/** The least CPU a job gets (a hundredth of one), JobLimits' own minimum. */
const JOB_NANO_CPUS_MIN = 10_000_000;

export type MachineShape = { cpuCores: number; ramBytes: bigint };
export type JobReserve = { cpus: number; memoryBytes: bigint };
export type JobCeilings = { cpus: number | null; memoryBytes: bigint | null; pids: number };

/**
 * A job may use the machine less the reserve, but never less than half the machine (a small machine still runs
 * jobs, and the agent keeps half of it), and never more than the host's ceilings:
 *
 *   cpus   = min(ceiling, max(cores - reserve, cores / 2))
 *   memory = min(ceiling, max(ram - reserve, ram / 2)), at least 64 MiB
 *   pids   = the ceiling (4096 unless the host says otherwise)
 */
export function jobLimitsFor(machine: MachineShape, reserve: JobReserve, ceilings: JobCeilings): JobLimits {
  const cores = Math.max(1, machine.cpuCores);
  let cpus = Math.max(cores - reserve.cpus, cores / 2);
  if (ceilings.cpus !== null) cpus = Math.min(cpus, ceilings.cpus);
  const ram = machine.ramBytes > 0n ? machine.ramBytes : JOB_MEMORY_BYTES_MIN;
  const left = ram - reserve.memoryBytes;
  let memory = left > ram / 2n ? left : ram / 2n;
  if (ceilings.memoryBytes !== null && ceilings.memoryBytes < memory) memory = ceilings.memoryBytes;
  if (memory < JOB_MEMORY_BYTES_MIN) memory = JOB_MEMORY_BYTES_MIN;
  return {
    nano_cpus: Math.max(JOB_NANO_CPUS_MIN, Math.round(cpus * NANO_CPUS_PER_CPU)),
    memory_bytes: memory.toString(),
    pids: ceilings.pids,
  };
}

/**
 * The limits a job runs under: what the launch announced (the offer's, from the manifest at enrollment), but never
 * more than this agent's own figures now (the host may have lowered them since, or the launch came from a control
 * plane that sends none).
 */
export function effectiveLimits(own: JobLimits, announced: JobLimits | undefined): JobLimits {
  if (announced === undefined) return { ...own };
  return {
    nano_cpus: Math.min(own.nano_cpus, announced.nano_cpus),
    memory_bytes: (BigInt(own.memory_bytes) < BigInt(announced.memory_bytes) ? own.memory_bytes : announced.memory_bytes).toString(),
    pids: Math.min(own.pids, announced.pids),
  };
}

export function containerLimitsOf(limits: JobLimits): ContainerLimits {
  return { nanoCpus: limits.nano_cpus, memoryBytes: Number(limits.memory_bytes), pids: limits.pids };
}

/** How a job's container is isolated beyond namespaces, cgroups, the capability set and no-new-privileges. */
export type JobIsolation = {
  /** The runtime named on the container; undefined: the engine's default. */
  runtime?: string;
  /** gvisor, kata, or runc (the default runtime); `+userns` when the engine remaps users. */
  description: string;
};

/** gVisor's runtime first (a user-space kernel), then Kata's (a light VM), as Docker names them once installed. */
const SANDBOX_RUNTIMES: ReadonlyArray<{ names: readonly string[]; kind: string }> = [
  { names: ['runsc'], kind: 'gvisor' },
  { names: ['kata', 'kata-runtime', 'io.containerd.kata.v2', 'kata-qemu', 'kata-fc', 'kata-clh'], kind: 'kata' },
];

function kindOf(runtime: string): string {
  for (const sandbox of SANDBOX_RUNTIMES) if (sandbox.names.includes(runtime)) return sandbox.kind;
  if (runtime.startsWith('runsc')) return 'gvisor';
  if (runtime.startsWith('kata')) return 'kata';
  return runtime;
}

/**
 * The runtime for job containers. `auto`: a sandbox when the engine has one (gVisor, else Kata), else its default;
 * `default`: the engine's default; a name: that runtime, which must be registered (a launch fails otherwise rather
 * than running a job less isolated than its host asked). A user-namespace remap is the engine's own setting: it
 * applies to every container and is reported here.
 */
export function chooseIsolation(setting: string, engine: EngineIsolation): JobIsolation {
  const userns = engine.userNamespaceRemap ? '+userns' : '';
  if (setting === 'default') return { description: `${kindOf(engine.defaultRuntime)}${userns}` };
  if (setting === 'auto') {
    for (const sandbox of SANDBOX_RUNTIMES) {
      const name = sandbox.names.find((candidate) => engine.runtimes.includes(candidate));
      if (name !== undefined) return { runtime: name, description: `${sandbox.kind}${userns}` };
    }
    return { description: `${kindOf(engine.defaultRuntime)}${userns}` };
  }
  if (!engine.runtimes.includes(setting)) {
    throw new Error(
      `job_runtime ${setting} is not registered with the Docker engine (it has ${engine.runtimes.join(', ') || 'none'}); install it or set job_runtime to auto`,
    );
  }
  return { runtime: setting, description: `${kindOf(setting)}${userns}` };
}
