import type { Clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import type { ReadinessConfig } from '../../config/readiness.js';
import type { Faults } from '../../faults.js';
import type { JobSecrets } from '../../domain/jobs/secrets.js';
import type { Store } from '../../store/db.js';
import type { HeartbeatReader } from '../../store/heartbeats.js';
import type { OutboxWriter } from '../../store/outbox.js';
import type { PaidAdmissionGuard } from '../admissions/guard.js';
import type { ReadinessProbes } from './readiness-probes.js';

/** What the job use cases read from the configuration. */
export interface JobSettings {
  platformFeeBps: number;
  termsVersion: string;
  heartbeatIntervalMs: number;
  meterIntervalS: number;
  meterSkewMs: number;
  retrievalWindowS: number;
  agentGraceMs: number;
  reconcileTimeoutMs: number;
  startTimeoutMs: number;
  /** Where renters reach a machine whose agent reported no public address. */
  accessHost: string;
  /** The operator's default spend-rate cap, for accounts that set none of their own. */
  spendRateCapMicroPerHour: bigint;
  /** Verified readiness: whether it runs (ARK_READINESS_VERIFY) and its bounds (config/readiness.ts). */
  readiness: ReadinessConfig;
  /** ARK_EARNINGS_MATURITY_S: a host charge is pending this long before it is payable; 0: payable at once. */
  earningsMaturityS: number;
}

export function jobSettingsOf(config: Config): JobSettings {
  return {
    platformFeeBps: config.platformFeeBps,
    termsVersion: config.termsVersion,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    meterIntervalS: config.meterIntervalS,
    meterSkewMs: config.meterSkewMs,
    retrievalWindowS: config.retrievalWindowS,
    agentGraceMs: config.jobAgentGraceMs,
    reconcileTimeoutMs: config.jobReconcileTimeoutMs,
    startTimeoutMs: config.jobStartTimeoutMs,
    accessHost: config.jobAccessHost ?? hostOfUrl(config.publicBaseUrl),
    spendRateCapMicroPerHour: config.spendRateCapMicroPerHour,
    readiness: config.readiness,
    earningsMaturityS: config.earnings.maturityS,
  };
}

function hostOfUrl(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  } catch {
    return '127.0.0.1';
  }
}

/** Everything a job use case is given: built once by services/index.ts. */
export interface JobDeps {
  store: Store;
  clock: Clock;
  settings: JobSettings;
  /** Queues agent commands inside the use case's transaction. */
  outbox: OutboxWriter;
  /** Last-seen as this process knows it (heartbeats may be buffered: store/heartbeats.ts). */
  heartbeats: HeartbeatReader;
  secrets: JobSecrets;
  /** Reservations pass the paid-admission guard (refused while admission is paused, unless authorized). */
  admissions: PaidAdmissionGuard;
  /** The readiness verifier's reach: an SSH handshake with the job's endpoint, the engine's model list (runtime.ts). */
  readinessProbes: ReadinessProbes;
  /** Where failures of background work (a readiness pass) are reported. */
  logger?: { error(obj: object, msg: string): void };
  /** The fault seam (faults.ts): a test kills the process at a named point of a use case; nothing otherwise. */
  faults: Faults;
}
