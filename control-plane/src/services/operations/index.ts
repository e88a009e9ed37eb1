import type { SettingsTestRequest, SettingsTestResult } from '@ark/shared';
import type { Clock } from '../../clock.js';
import type { Store } from '../../store/db.js';
import { type LedgerSummaryRecord, ledgerSummary } from './ledger-summary.js';
import { type SettingsTestDeps, testSubsystem } from './settings-test.js';

export type { LedgerSummaryRecord } from './ledger-summary.js';

/** What operators read and check: the platform's books and each subsystem against its stored setting. */
export interface OperationsServices {
  testSubsystem(adminAccountId: string, request: SettingsTestRequest): Promise<SettingsTestResult>;
  ledgerSummary(query: { from?: string; to?: string }): Promise<LedgerSummaryRecord>;
}

export function buildOperationsServices(deps: SettingsTestDeps & { store: Store; clock: Clock }): OperationsServices {
  return {
    testSubsystem: (adminAccountId, request) => testSubsystem(deps, adminAccountId, request),
    ledgerSummary: (query) => ledgerSummary(deps, query),
  };
}
