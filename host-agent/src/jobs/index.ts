export {
  ACTIVE_PHASES,
  JOB_RECORD_VERSION,
  type JobAccess,
  type JobChannelPort,
  type ConfinementState,
  type JobEventBody,
  type JobEvidence,
  type JobMessageBody,
  type JobPhase,
  type JobRecord,
  type JobStatus,
  type JobStatusBody,
  type MeterReceiptBody,
  type MeterState,
  type PublishedPort,
  type StopRequest,
} from './job-record.js';
export { isJobId, JOB_RECORDS_MAX, JobStore, type JobStoreLogger } from './job-store.js';
export {
  JOB_LABEL,
  type JobCommand,
  JobSupervisor,
  type JobSupervisorLogger,
  type JobSupervisorOptions,
  type RunningJob,
} from './job-supervisor.js';
export { createJobContext, type JobContext, type JobSettings, type LiveJob, liveJob, resolveJobSettings } from './job-context.js';
export { enterPhase, type JobPhaseEvent, JobPhaseRefusedError, nextPhase, type PhaseTransition, statusOfPhase } from './job-phase.js';
export { nextMeterDelayMs, nextReceipt, type ReceiptInput, type RunInterval, runtimeInPeriodMs } from './meter.js';
export { checkReadiness, type HttpAnswer, NotReadyError, probeHttp, probeTcp, type ReadinessPlan } from './readiness.js';
export { JobConfinement, QUOTA_WARNING_RATIO, quotaVerdict } from './job-confinement.js';
export { chooseIsolation, containerLimitsOf, effectiveLimits, type JobIsolation, jobLimitsFor } from './job-limits.js';
export { boundedText, DETAIL_MAX_CHARS, errorText, redact } from './text.js';
