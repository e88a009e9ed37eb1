// Builds a self-test's parts from the agent's configuration and identity: the CLI's `ark-agent selftest` and the
// daemon's run_selftest and job-start checks run the same ones.
import { availableParallelism, totalmem } from 'node:os';
import type { Clock, ReceiptNetwork } from '@ark/shared';
import { nodeSigner } from '../channel/signer.js';
import type { GpuIdentitySource } from '../collectors/gpu-identity.js';
import type { AgentConfig } from '../config.js';
import { jobLimitsFor } from '../jobs/job-limits.js';
import type { MachineFacts } from '../manifest.js';
import type { ContainerRuntime } from '../runtime/container-runtime.js';
import { LazyDockerRuntime } from '../runtime/lazy-docker-runtime.js';
import { BenchmarkRunner } from './benchmark-runner.js';
import { nextReceiptSeq } from './receipt-seq.js';
import type { SelftestMachine, SelftestParts } from './selftest.js';

export type SelftestPartsInput = {
  config: Pick<AgentConfig, 'stateDir' | 'docker' | 'jobs' | 'selftest'>;
  machineId: string;
  /** The machine's 64-byte tweetnacl secret key (identity.json). */
  secretKey: Uint8Array;
  identity: GpuIdentitySource;
  readMachineFacts: (diskPath: string) => Promise<MachineFacts>;
  clock: Clock;
  /** Replaces the Docker engine at the configured socket (tests). */
  runtime?: ContainerRuntime;
  network?: () => Promise<ReceiptNetwork | undefined>;
};

export function buildSelftestParts(input: SelftestPartsInput): SelftestParts {
  const { config } = input;
  const runtime = input.runtime ?? new LazyDockerRuntime({ socketPath: config.docker.socketPath });
  // The benchmark runs under the limits any job gets here (job-runtime.ts works them out the same way).
  let machine: Promise<SelftestMachine> | undefined;
  const jobLimits = jobLimitsFor(
    { cpuCores: availableParallelism(), ramBytes: BigInt(totalmem()) },
    config.jobs.reserve,
    config.jobs.ceilings,
  );
  return {
    machineId: input.machineId,
    identity: input.identity,
    machine: () => {
      // Read once per process: the CPU and memory do not change under a running agent, and reading them costs
      // 100 to 300 ms that a job-start check would otherwise add to every start.
      machine ??= input.readMachineFacts(config.stateDir).then(
        (facts) => ({ cpu: { model: facts.cpuModel || 'unknown CPU', cores: facts.cpuCores }, ram_bytes: Number(facts.ramBytes) }),
        (error: unknown) => {
          machine = undefined;
          throw error;
        },
      );
      return machine;
    },
    benchmark: new BenchmarkRunner({ runtime, clock: input.clock, jobLimits }),
    ...(config.selftest.benchmarkImage === null ? {} : { benchmarkImage: config.selftest.benchmarkImage }),
    ...(input.network === undefined ? {} : { network: input.network }),
    nextSeq: () => nextReceiptSeq(config.stateDir),
    sign: nodeSigner(input.secretKey),
    clock: input.clock,
  };
}
