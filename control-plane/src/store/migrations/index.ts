import type { Migration } from 'kysely/migration';
import * as m0001 from './0001-foundation.js';
import * as m0002 from './0002-accounts.js';
import * as m0003 from './0003-ledger.js';
import * as m0004 from './0004-templates.js';
import * as m0005 from './0005-hosts.js';
import * as m0006 from './0006-gateway.js';
import * as m0007 from './0007-jobs.js';
import * as m0008 from './0008-deposits.js';
import * as m0009 from './0009-x402.js';
import * as m0010 from './0010-withdrawals.js';
import * as m0011 from './0011-admissions.js';
import * as m0012 from './0012-agent-wallets.js';
import * as m0013 from './0013-tickets-webhooks.js';
import * as m0015 from './0015-market.js';
import * as m0016 from './0016-spend-cap.js';
import * as m0017 from './0017-reliability.js';
import * as m0018 from './0018-oauth.js';
import * as m0019 from './0019-agent-replicas.js';
import * as m0020 from './0020-idempotency-purge-order.js';
import * as m0021 from './0021-deposit-refunds.js';
import * as m0022 from './0022-verified-readiness.js';
import * as m0023 from './0023-hardware-receipts.js';
import * as m0024 from './0024-earnings-maturity.js';
import * as m0025 from './0025-ssh-keys.js';
import * as m0026 from './0026-cpu-listing.js';
import * as m0027 from './0027-job-gpu-health.js';
import * as m0028 from './0028-lease-changes.js';
import * as m0029 from './0029-fee-shards.js';
import * as m0030 from './0030-telemetry-device-rows.js';

// One ordered list, shared by both dialects. Add a file per change; never edit a released one.
export const migrations: Record<string, Migration> = {
  '0001-foundation': m0001,
  '0002-accounts': m0002,
  '0003-ledger': m0003,
  '0004-templates': m0004,
  '0005-hosts': m0005,
  '0006-gateway': m0006,
  '0007-jobs': m0007,
  '0008-deposits': m0008,
  '0009-x402': m0009,
  '0010-withdrawals': m0010,
  '0011-admissions': m0011,
  '0012-agent-wallets': m0012,
  '0013-tickets-webhooks': m0013,
  '0015-market': m0015,
  '0016-spend-cap': m0016,
  '0017-reliability': m0017,
  '0018-oauth': m0018,
  '0019-agent-replicas': m0019,
  '0020-idempotency-purge-order': m0020,
  '0021-deposit-refunds': m0021,
  '0022-verified-readiness': m0022,
  '0023-hardware-receipts': m0023,
  '0024-earnings-maturity': m0024,
  '0025-ssh-keys': m0025,
  '0026-cpu-listing': m0026,
  '0027-job-gpu-health': m0027,
  '0028-lease-changes': m0028,
  '0029-fee-shards': m0029,
  '0030-telemetry-device-rows': m0030,
};
