import type { AccountsTables } from './tables/accounts.js';
import type { AdmissionsTables } from './tables/admissions.js';
import type { AgentsTables } from './tables/agents.js';
import type { DepositsTables } from './tables/deposits.js';
import type { EarningsTables } from './tables/earnings.js';
import type { FoundationTables } from './tables/foundation.js';
import type { GatewayTables } from './tables/gateway.js';
import type { HardwareReceiptsTables } from './tables/hardware-receipts.js';
import type { HostsTables } from './tables/hosts.js';
import type { JobsTables } from './tables/jobs.js';
import type { LedgerTables } from './tables/ledger.js';
import type { MarketTables } from './tables/market.js';
import type { OAuthTables } from './tables/oauth.js';
import type { ReliabilityTables } from './tables/reliability.js';
import type { TemplatesTables } from './tables/templates.js';
import type { X402Tables } from './tables/x402.js';
import type { TicketsTables } from './tables/tickets.js';
import type { WebhooksTables } from './tables/webhooks.js';
import type { WithdrawalsTables } from './tables/withdrawals.js';

// The whole database, as the union of each aggregate's tables.
export interface Database
  extends FoundationTables,
    AccountsTables,
    LedgerTables,
    EarningsTables,
    TemplatesTables,
    HostsTables,
    GatewayTables,
    JobsTables,
    DepositsTables,
    X402Tables,
    WithdrawalsTables,
    TicketsTables,
    WebhooksTables,
    AdmissionsTables,
    AgentsTables,
    MarketTables,
    ReliabilityTables,
    HardwareReceiptsTables,
    OAuthTables {}
