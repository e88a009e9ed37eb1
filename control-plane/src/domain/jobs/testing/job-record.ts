import type { JobRecord } from '../job.js';

// A RUNNING job for the domain's unit tests: 1 USDC/h plus a 10% fee, 0.55 USDC funded (30 minutes), a 2 h limit,
// its meter started at T0.

export const T0 = new Date('2026-01-01T00:00:00.000Z');
export const at = (ms: number): Date => new Date(T0.getTime() + ms);

export function jobRecord(overrides: Partial<JobRecord> = {}): JobRecord {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    accountId: 'renter',
    machineId: '00000000-0000-4000-8000-000000000002',
    hostAccountId: 'host',
    quoteId: 'q',
    state: 'RUNNING',
    fence: 1n,
    jobVersion: 3n,
    budgetVersion: 1n,
    rate: { machineRateMicroPerHour: 1_000_000n, platformFeeBps: 1000n },
    fundedBudgetMicro: 550_000n,
    durationLimitS: 7200n,
    hostCeilingAt: at(86_400_000),
    gpuCount: 1,
    gpuModel: 'GPU',
    gpuPciAddresses: ['0000:01:00.0'],
    imageDigest: 'x',
    template: null,
    acceptedRuntimeMs: 0n,
    cumulativeChargeMicro: 0n,
    chargedHostMicro: 0n,
    chargedFeeMicro: 0n,
    meterStartedAt: at(0),
    meterFloorAt: at(0),
    lastMeterReceiptAt: null,
    meterSeq: 0n,
    meteredUntil: null,
    access: null,
    pullProgressPct: null,
    stopRequestedAt: null,
    stopReason: null,
    closeReason: null,
    stoppedAt: null,
    retrievalUntil: null,
    closedAt: null,
    stateChangedAt: at(0),
    eventSeq: 0n,
    createdAt: at(-10_000),
    updatedAt: at(0),
    ...overrides,
  };
}
