import { RELAY_BODY_MAX_BYTES } from '@ark/shared/limits';

// The OpenAI-compatible relay's limits (issue 9). Read once by loadConfig; a bad value stops the server with exit
// code 2 and a message naming the variable.

export interface RelayConfig {
  /** ARK_RELAY_MAX_BODY_BYTES: the largest request body the relay forwards (at most what one channel frame carries). */
  maxBodyBytes: number;
  /** ARK_RELAY_FIRST_BYTE_TIMEOUT_S: how long the engine may take before its answer begins. */
  firstByteTimeoutMs: number;
  /** ARK_RELAY_MAX_STREAM_S: how long one answer (a whole stream) may last. */
  maxStreamMs: number;
  /** ARK_RELAY_MAX_STREAMS_PER_JOB: requests open at once on one job, per control-plane process. */
  maxStreamsPerJob: number;
}

/** Reads an integer variable within bounds, or its default (config.ts's reader: a bad value stops the server). */
export type IntReader = (name: string, fallback: number, min: number, max: number) => number;

export function relayConfigFrom(int: IntReader): RelayConfig {
  return {
    maxBodyBytes: int('ARK_RELAY_MAX_BODY_BYTES', RELAY_BODY_MAX_BYTES, 1024, RELAY_BODY_MAX_BYTES),
    firstByteTimeoutMs: int('ARK_RELAY_FIRST_BYTE_TIMEOUT_S', 120, 1, 3600) * 1000,
    maxStreamMs: int('ARK_RELAY_MAX_STREAM_S', 900, 1, 86_400) * 1000,
    maxStreamsPerJob: int('ARK_RELAY_MAX_STREAMS_PER_JOB', 8, 1, 1024),
  };
}
