import type { SettingsTestRequest, SettingsTestResult } from '@ark/shared';
import { type FleetDeps, type FleetRecord, fleet } from './fleet.js';
import { type LedgerSummaryRecord, ledgerSummary } from './ledger-summary.js';
import { type SettingsTestDeps, testSubsystem } from './settings-test.js';

export type { FleetRecord } from './fleet.js';
export type { LedgerSummaryRecord } from './ledger-summary.js';

/** What operators read and check: the platform's books, the fleet and each subsystem against its stored setting. */
export interface OperationsServices {
  testSubsystem(adminAccountId: string, request: SettingsTestRequest): Promise<SettingsTestResult>;
  ledgerSummary(query: { from?: string; to?: string }): Promise<LedgerSummaryRecord>;
  /** Machines (online, per go-live state), GPUs (listed, allocated) and jobs per state, now. */
  fleet(): Promise<FleetRecord>;
}

export function buildOperationsServices(deps: SettingsTestDeps & FleetDeps): OperationsServices {
  return {
    testSubsystem: (adminAccountId, request) => testSubsystem(deps, adminAccountId, request),
    ledgerSummary: (query) => ledgerSummary(deps, query),
    fleet: () => fleet(deps),
  };
}
