// What the agent's parts report to its Prometheus metrics. Only this interface and the no-op live here: the
// exporter (prometheus.ts, with prom-client) is imported by `run` only when metrics are configured, so an agent
// without metrics never loads it.

/** Labels of ark_agent_collector_errors_total. */
export type CollectorName = 'gpu' | 'host';

/** How one image pull ended: fetched from the registry, already present under its digest, or failed. */
export type PullOutcome = 'pulled' | 'present' | 'failed';

export interface AgentMetricsHooks {
  /** A job_status the job runtime reported (accepted, pulling, starting, ready, exited, stopped, cleaned, failed). */
  jobStatus(status: string): void;
  /** One pullImage call: its outcome, how long it took, and the pulled image's size when Docker reported one. */
  imagePull(outcome: PullOutcome, seconds: number, bytes: number | undefined): void;
  /** A collector that could not read what it measures (nvidia-smi missing or failing, a host figure unreadable). */
  collectorError(collector: CollectorName): void;
  /** A heartbeat handed to a connected channel. */
  heartbeatSent(): void;
  /** The channel was established (welcome received): the first time, and again after each lost connection. */
  channelConnected(): void;
}

export const noMetrics: AgentMetricsHooks = {
  jobStatus: () => undefined,
  imagePull: () => undefined,
  collectorError: () => undefined,
  heartbeatSent: () => undefined,
  channelConnected: () => undefined,
};
