import type { WalletCodeReader } from '../chain/wallet-code.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import { type Faults, noFaults } from '../faults.js';
import type { OAuthProviderName } from '../config/oauth.js';
import type { OAuthProviderClient } from '../oauth/providers.js';
import type { Mailer } from '../mail.js';
import { JobSecrets } from '../domain/jobs/secrets.js';
import type { Store } from '../store/db.js';
import { LIVENESS_GRACE_HEARTBEATS } from '../domain/machines/go-live.js';
import { HeartbeatBuffer } from '../store/heartbeats.js';
import { MachineLiveFactsReader } from '../store/machine-live-facts.js';
import { outboxWriter } from '../store/outbox.js';
import { type AccountServices, buildAccountServices } from './accounts/index.js';
import { type AdmissionServices, buildAdmissionServices } from './admissions/index.js';
import type { AlertSink } from './alerts/sink.js';
import { buildOperationsServices, type OperationsServices } from './operations/index.js';
import type { ChainReader } from '../chain/reader.js';
import type { ChainNetwork } from '../domain/payments/chains.js';
import { paidAdmissionGuard } from './admissions/guard.js';
import { type BillingServices, buildBillingServices } from './billing/index.js';
import { buildDepositServices, type DepositServices } from './billing/deposits-index.js';
import { buildX402Services, type X402Services } from './billing/x402-index.js';
import type { X402Deps } from './billing/x402-deps.js';
import { paidAdmissionGuard as fundingAdmissionGuard } from './admissions/guard.js';
import type { X402Chain } from '../chain/x402-chain.js';
import { buildHostingServices, type HostingServices, hostingSettingsOf, ReceiptRefusalCounts } from './hosting/index.js';
import { buildOfferServices, type OfferServices } from './hosting/offers.js';
import { buildPairingServices, type PairingServices } from './hosting/pairing.js';
import { buildJobServices, type JobServices, jobSettingsOf, type ReadinessProbes } from './jobs/index.js';
import { buildMarketServices, type MarketServices } from './market/index.js';
import { buildReliabilityServices, type ReliabilityServices } from './reliability/index.js';
import { buildTemplateServices, type TemplateServices } from './templates/index.js';
import { buildTreasuryServices, type TreasuryChain, type TreasuryServices } from './treasury/index.js';
import { buildTicketServices, type TicketServices } from './tickets/index.js';
import { buildWebhookServices, type WebhookServices } from './webhooks/index.js';
import { buildWithdrawalServices, type WithdrawalServices } from './withdrawals/index.js';
import { readAdmissionState } from '../store/admissions.js';

// The composition of the use cases: built once per process by the composition root (runtime.ts for `ark-cp serve`,
// cli/index.ts for one command, over runtime.ts's adapters; a test helper with its own) and handed to every edge:
// routes, the gateway's handler table (gateway/handlers-table.ts), workers and CLI commands. Every adapter is given:
// none is built or defaulted here.

export interface ServiceDeps {
  store: Store;
  /** Reads a configured network (the subsystem test): a viem client over the network's RPC URL in runtime.ts. */
  chainReaderFor: (network: ChainNetwork) => ChainReader;
  /** Where alerts go: the ARK_ALERT_WEBHOOK_URL sink in runtime.ts. */
  alerts: AlertSink;
  clock: Clock;
  config: Config;
  /** Sends account mail (verification links). */
  mailer: Mailer;
  /** Where failures of background work (the heartbeat flush) are reported. */
  logger?: { error(obj: object, msg: string): void };
  /** The primary network's x402 settlement side (built by runtime.ts when ARK_X402_ENABLED); null: none (503). */
  x402Chain: X402Chain | null;
  /** Contract code on the primary network, for agent registration (built by runtime.ts from ARK_CHAINS); null: none. */
  walletCode: WalletCodeReader | null;
  /** The chain side of the treasury's reconciliation (built by runtime.ts from ARK_CHAINS); null: none (it refuses). */
  treasuryChain: TreasuryChain | null;
  /** The sign-in providers configured in ARK_OAUTH_* (built once by runtime.ts: Google's discovery document is cached). */
  oauthProviders: Partial<Record<OAuthProviderName, OAuthProviderClient>>;
  /**
   * The readiness verifier's reach (runtime.ts): an SSH handshake with a job's endpoint (ssh2), and the engine's model
   * list through the gateway's relay tunnel (bound once the app's gateway exists).
   */
  readinessProbes: ReadinessProbes;
  /** The fault seam (faults.ts, a test facility; runtime.ts builds it from ARK_FAULT_EXIT_AT); none when absent. */
  faults?: Faults;
}

/** One area per key. */
export interface Services {
  jobs: JobServices;
  hosting: HostingServices;
  /** Pairing by code, enrollment tokens and enrollment (the HTTP side of bringing a machine in). */
  pairing: PairingServices;
  /** Offer commits and the renters' offer list. */
  offers: OfferServices;
  accounts: AccountServices;
  templates: TemplateServices;
  billing: BillingServices;
  /** Money in by deposit: addresses, history, the chain watchers (issue 8). */
  deposits: DepositServices;
  /** Money in by x402 top-up: the route's use case, the settlement worker, the top-ups history (issue 8). */
  x402: X402Services;
  /** The admission switch, acceptance authorizations and the paid-admission guard (issue 12). */
  admissions: AdmissionServices;
  /** Where alerts go (ARK_ALERT_WEBHOOK_URL): the chain watchers' finality stall, the subsystem test. */
  alerts: AlertSink;
  /** Subsystem tests and the platform's books (issue 12). */
  operations: OperationsServices;
  /** Money out: withdrawals, payouts, their review and the payer (issue 12). */
  withdrawals: WithdrawalServices;
  /** Support tickets (issue 10). */
  tickets: TicketServices;
  /** Signed webhooks: endpoints, deliveries, the delivery step (issue 10). */
  webhooks: WebhookServices;
  /** Host market statistics: the worker's refresh and the hosts' read (issue 10). */
  market: MarketServices;
  /** Machine reliability: the worker's scoring step (issue 10). */
  reliability: ReliabilityServices;
  /** The treasury against the ledger: reconciliation, its last run, the sweep plan (issue 22). */
  treasury: TreasuryServices;
  /** Flushes what the services buffer (heartbeats): after the gateway closed, before the store closes. */
  close(): Promise<void>;
}

export function buildServices(deps: ServiceDeps): Services {
  const { store, clock, config } = deps;
  const outbox = outboxWriter();
  // One guard for every paid operation: reservations, offer publication, funding credits, payouts, withdrawals.
  const admissionGuard = paidAdmissionGuard({ clock });
  const { alerts, oauthProviders } = deps;
  const treasury = buildTreasuryServices({
    store,
    clock,
    networks: config.payments.chains?.networks ?? [],
    settings: config.treasury,
    chain: deps.treasuryChain,
    alerts,
    logger: deps.logger && 'warn' in deps.logger ? (deps.logger as { warn(obj: object, msg: string): void }) : undefined,
  });
  const deposits = buildDepositServices({ store, clock, payments: config.payments, admissions: admissionGuard });
  const heartbeats = new HeartbeatBuffer(store, clock, {
    onlineGraceMs: LIVENESS_GRACE_HEARTBEATS * config.heartbeatIntervalMs,
    onError: (error) => deps.logger?.error({ err: error }, 'heartbeat flush failed'),
  });
  const hosting = buildHostingServices({
    store,
    clock,
    settings: hostingSettingsOf(config),
    outbox,
    heartbeats,
    liveFacts: new MachineLiveFactsReader(store),
    admissions: admissionGuard,
    receiptRefusals: new ReceiptRefusalCounts(),
  });
  const jobs = buildJobServices({
    store,
    clock,
    settings: jobSettingsOf(config),
    outbox,
    heartbeats,
    secrets: new JobSecrets(config.secretKey),
    admissions: admissionGuard,
    readinessProbes: deps.readinessProbes,
    ...(deps.logger ? { logger: deps.logger } : {}),
    faults: deps.faults ?? noFaults,
  });
  return {
    jobs,
    hosting,
    pairing: buildPairingServices({ store, clock, settings: config, enrollmentSelftest: hosting.scheduleEnrollmentSelftest }),
    offers: buildOfferServices({ store, clock, heartbeats, admissions: admissionGuard }),
    accounts: buildAccountServices({ store, clock, mailer: deps.mailer, config, walletCode: deps.walletCode, oauthProviders }),
    templates: buildTemplateServices({ store, clock }),
    billing: buildBillingServices({ store, clock }),
    x402: buildX402Services({
      store,
      clock,
      config,
      chain: deps.x402Chain,
      // A new top-up is a funding credit: refused (503, retryable) while paid admission is paused.
      admit: (trx, request) =>
        fundingAdmissionGuard({ clock }).admit(trx, { accountId: request.accountId, kind: 'funding_credit', reference: request.reference }),
      admissionOpen: async () => (await readAdmissionState(store.db)).enabled,
      logger: deps.logger && 'warn' in deps.logger ? (deps.logger as unknown as X402Deps['logger']) : undefined,
    }),
    deposits,
    withdrawals: buildWithdrawalServices({
      store,
      clock,
      payments: config.payments,
      payouts: config.payouts,
      admit: (trx, request) => admissionGuard.admit(trx, request),
    }),
    admissions: buildAdmissionServices({ store, clock, releaseHeldDeposits: () => deposits.releaseHeld() }, admissionGuard),
    alerts,
    operations: buildOperationsServices({
      store,
      clock,
      settings: { smtpUrl: config.smtp.url, networks: config.payments.chains?.networks ?? [] },
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      latestReconciliation: treasury.latest,
      oauthProviders,
      alerts,
      chainReaderFor: deps.chainReaderFor,
    }),
    tickets: buildTicketServices({ store, clock }),
    webhooks: buildWebhookServices({
      store,
      clock,
      settings: config.webhooks,
      secretKey: config.secretKey,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
    }),
    market: buildMarketServices({ store, clock, minSampleSize: config.marketMinSampleSize }),
    reliability: buildReliabilityServices({
      store,
      clock,
      settings: config.reliability,
      onlineGraceMs: LIVENESS_GRACE_HEARTBEATS * config.heartbeatIntervalMs,
    }),
    treasury,
    async close() {
      await jobs.readiness.close();
      await hosting.close();
    },
  };
}
