// What the readiness verifier reaches out through (issue 24 item 1). The real ones are built once in runtime.ts
// (readiness/ssh-host-key-probe.ts over ssh2, readiness/engine-models-probe.ts over the gateway's relay tunnel); unit
// tests give fakes (testing/readiness.ts). Each one bounds its own wait and never blocks the event loop.

/** Why a probe could not read what it was asked for: a sentence for the job event and the machine problem. */
export class ReadinessProbeError extends Error {}

export interface SshHostKeyProbe {
  /**
   * Opens a TCP connection to `endpoint`, runs the SSH key exchange, and hangs up before authentication: answers the
   * host key's fingerprint (`SHA256:<base64>`) and when it was seen. Rejects with ReadinessProbeError on a refused
   * or timed-out connection or handshake.
   */
  hostKeyAt(endpoint: { host: string; port: number }): Promise<{ fingerprint: string; seenAt: Date }>;
}

export interface EngineModelsProbe {
  /**
   * Whether this process holds the machine's agent channel. The relay reaches an agent only from the replica holding
   * its socket, so that replica verifies the machine's jobs (another one would answer "not connected").
   */
  reaches(machineId: string): boolean;
  /** The model ids the job's engine lists (GET /v1/models through the relay). Rejects with ReadinessProbeError. */
  modelsOf(job: { id: string; machineId: string; fence: bigint }): Promise<string[]>;
}

export interface ReadinessProbes {
  ssh: SshHostKeyProbe;
  engine: EngineModelsProbe;
}
