import { endpointText } from '../domain/jobs/readiness.js';
import { ReadinessProbeError, type ReadinessProbes } from '../services/jobs/index.js';
import type { Clock } from '../clock.js';

// A stand-in for the readiness verifier's probes in unit tests (the real ones, ssh2 and the relay, run in
// readiness/*.test.ts and the e2e suites). By default every endpoint presents the fingerprint testing/renting.ts's
// readyAccess reports and every engine lists one model; a test sets what one endpoint or engine answers instead.

/** The fingerprint testing/renting.ts's readyAccess (and the simulator's agents) report. */
export const TEST_HOST_KEY_FINGERPRINT = 'SHA256:2mjI0vU4aW7eMvZxEu2Zb8bNf7v7mTdPq5mJQfR2bS8';

export interface FakeReadinessProbes extends ReadinessProbes {
  /** What an endpoint (`host:port`) answers: a fingerprint, or a failure (its message is the reason). */
  readonly hostKeys: Map<string, string | Error>;
  /** What a job's engine lists, by job id: model ids, or a failure. */
  readonly engines: Map<string, string[] | Error>;
  /** Every endpoint the SSH probe was asked for, in order. */
  readonly sshCalls: string[];
  /** Machines whose channel this process does not hold (their jobs are left to another replica). */
  readonly elsewhere: Set<string>;
  /** An endpoint (`host:port`) whose handshake waits for this promise before it answers (a slow rig). */
  readonly holds: Map<string, Promise<unknown>>;
}

export function fakeReadinessProbes(clock: Pick<Clock, 'now'>): FakeReadinessProbes {
  const hostKeys = new Map<string, string | Error>();
  const engines = new Map<string, string[] | Error>();
  const sshCalls: string[] = [];
  const elsewhere = new Set<string>();
  const holds = new Map<string, Promise<unknown>>();
  return {
    hostKeys,
    engines,
    sshCalls,
    elsewhere,
    holds,
    ssh: {
      async hostKeyAt(endpoint) {
        const where = endpointText(endpoint);
        sshCalls.push(where);
        await holds.get(where);
        const answer = hostKeys.get(where) ?? TEST_HOST_KEY_FINGERPRINT;
        if (answer instanceof Error) throw new ReadinessProbeError(answer.message);
        return { fingerprint: answer, seenAt: clock.now() };
      },
    },
    engine: {
      reaches: (machineId) => !elsewhere.has(machineId),
      async modelsOf(job) {
        const answer = engines.get(job.id) ?? ['tiny'];
        if (answer instanceof Error) throw new ReadinessProbeError(answer.message);
        return answer;
      },
    },
  };
}
