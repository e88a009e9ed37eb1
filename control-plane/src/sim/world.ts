import { createHash } from 'node:crypto';
import type { HeartbeatMessage, ReliableAgentMessage } from '@ark/shared';
import type { ChainWatcher } from '../services/billing/chain-watch.js';
import { ManualClock } from '../clock.js';
import { type Config, loadConfig } from '../config/index.js';
import type { ChainNetwork } from '../domain/payments/chains.js';
import { GroupApplier } from '../gateway/applier.js';
import { ChannelHandlers } from '../gateway/handlers.js';
import { fillChannelHandlers } from '../gateway/handlers-table.js';
import { buildServices, type Services } from '../services/index.js';
import { fakeReadinessProbes } from '../testing/readiness.js';
import type { Payer } from '../services/withdrawals/payer.js';
import type { Store } from '../store/db.js';
import { HDKey } from 'viem/accounts';
import { BASE_CHAIN_ID, BASE_USDC, SimChain } from './chain.js';

// The real system under simulation: the control plane's services (buildServices, the composition every edge
// shares) over a real store, the manual clock, the agent channel's handler table and apply-once applier, and the
// background workers (deposit watcher, x402 settlement, payer, job sweeps) stepped when simulated time passes.
// A crash drops everything the process holds (services, applier, watcher, payer, their leases' owners) and builds
// it again over the same database, as a restarted `ark-cp serve` would.

const USDC = 1_000_000n;

/** The configuration the simulation runs: the defaults, with amounts small enough for a short sequence to reach them. */
export const SIM_LIMITS = {
  /** ARK_BALANCE_CAP_MICRO: deposits past it are HELD. */
  balanceCapMicro: 100n * USDC,
  /** ARK_MIN_DEPOSIT_MICRO. */
  minDepositMicro: 1n * USDC,
  /**
   * ARK_WITHDRAWAL_MIN_MICRO: 1 micro, so that "everything an account owns can be taken out" holds to the last micro
   * (the default, 1 USDC, leaves dust by design; dust is not what this simulation looks for).
   */
  minWithdrawalMicro: 1n,
  /** ARK_WITHDRAWAL_REVIEW_ABOVE_MICRO: small, so that reviews happen. */
  reviewAboveMicro: 60n * USDC,
  /** ARK_TOPUP_MIN_MICRO / ARK_TOPUP_MAX_MICRO. */
  topUpMinMicro: 1n * USDC,
  topUpMaxMicro: 1000n * USDC,
} as const;

export const SIM_NETWORK: ChainNetwork = {
  name: 'base',
  chainId: BASE_CHAIN_ID,
  rpcUrl: 'http://127.0.0.1:9',
  assets: [{ symbol: 'USDC', address: BASE_USDC, decimals: 6 }],
  native: null,
};

const configs = new Map<string, Config>();

/** The simulation's configuration, built once per process and seed (deriving the xpub costs milliseconds). */
function simConfig(seed: number, treasury: `0x${string}`): Config {
  const key = `${seed}:${treasury}`;
  const cached = configs.get(key);
  if (cached) return cached;
  const config = buildSimConfig(seed, treasury);
  configs.set(key, config);
  return config;
}

function buildSimConfig(seed: number, treasury: `0x${string}`): Config {
  const secret = createHash('sha256').update(`ark-sim-secret:${seed}`).digest('hex');
  const base = loadConfig({ ARK_SECRET_KEY: secret, ARK_DATA_DIR: '/nonexistent/ark-sim', LOG_LEVEL: 'silent' });
  const xpub = HDKey.fromMasterSeed(createHash('sha256').update(`ark-sim-xpub:${seed}`).digest()).derive("m/44'/60'/0'").publicExtendedKey;
  return {
    ...base,
    payments: {
      ...base.payments,
      chains: { networks: [SIM_NETWORK] },
      depositXpub: xpub,
      balanceCapMicro: SIM_LIMITS.balanceCapMicro,
      minDepositMicro: SIM_LIMITS.minDepositMicro,
    },
    payouts: { ...base.payouts, minMicro: SIM_LIMITS.minWithdrawalMicro, reviewAboveMicro: SIM_LIMITS.reviewAboveMicro },
    // Earnings are payable at once here: the model's drain takes everything out without a maturity to wait for.
    // Maturity itself is proven by store/pending-earnings.test.ts and the payouts e2e.
    earnings: { maturityS: 0, maturityIntervalMs: 1_000 },
    x402: {
      ...base.x402,
      enabled: true,
      treasury,
      settlementKeyFile: '/nonexistent/ark-sim/settlement.key',
      minMicro: SIM_LIMITS.topUpMinMicro,
      maxMicro: SIM_LIMITS.topUpMaxMicro,
    },
  };
}

export class World {
  readonly store: Store;
  readonly clock: ManualClock;
  readonly chain: SimChain;
  readonly config: Config;
  services!: Services;
  channel!: ChannelHandlers;
  #applier!: GroupApplier;
  #watcher!: ChainWatcher;
  #payer!: Payer;
  /** How many times the process was (re)started: 1 after the first build. */
  starts = 0;

  constructor(store: Store, seed: number) {
    this.store = store;
    this.clock = new ManualClock('2026-01-05T00:00:00.000Z');
    this.chain = new SimChain(() => this.clock.now());
    this.config = simConfig(seed, this.chain.treasury);
    this.#start();
  }

  #start(): void {
    this.starts++;
    this.services = buildServices({
      store: this.store,
      clock: this.clock,
      config: this.config,
      mailer: { send: async () => {} },
      alerts: { target: null, send: async () => ({ delivered: false, status: null, error: 'no alert sink in the simulation' }) as never },
      x402Chain: this.chain.x402,
      walletCode: { hasCode: async () => false },
      oauthProviders: {},
      // Every read of the one simulated network goes to the simulated chain; no treasury worker runs here.
      chainReaderFor: () => this.chain.reader,
      treasuryChain: null,
      // The simulated agents run no SSH server: their reported endpoints verify (testing/readiness.ts).
      readinessProbes: fakeReadinessProbes(this.clock),
    });
    this.channel = fillChannelHandlers(new ChannelHandlers(), this.services);
    this.#applier = new GroupApplier({ store: this.store, handlers: this.channel, clock: this.clock });
    this.#watcher = this.services.deposits.watcher(SIM_NETWORK, this.chain.reader, { owner: `sim-process-${this.starts}` });
    this.#payer = this.services.withdrawals.payer(this.chain.payoutWallet);
  }

  /**
   * The process dies and starts again on the same database: in-memory state is gone, and the leases the old
   * process held (chain watcher, payer) stay in the store until they expire. Buffered heartbeats are written first:
   * last-seen is not money, and a flush timer of the dead process must not write after its death.
   */
  async crash(): Promise<void> {
    await this.services.hosting.heartbeats.close();
    this.#start();
  }

  /**
   * Simulated time passes. Awaited: a clock whose advance() fires the timers that fall due returns a promise, and
   * everything that waits on it has run once this resolves.
   */
  async advance(ms: number): Promise<void> {
    await this.clock.advance(ms);
  }

  /** A reliable agent message, as the gateway applies it: the dedupe mark and the effect in one transaction. */
  async deliver(machineId: string, msg: ReliableAgentMessage): Promise<void> {
    await this.#applier.apply(machineId, msg);
  }

  /** A heartbeat through every registered handler; plain ones wait in the write-behind buffer (flushHeartbeats). */
  async heartbeat(machineId: string, msg: HeartbeatMessage): Promise<void> {
    await this.channel.heartbeat(machineId, msg, this.clock.now());
  }

  /** Writes buffered heartbeats now: the buffer's own timer runs on real time, which the simulation does not use. */
  async flushHeartbeats(): Promise<void> {
    await this.services.hosting.heartbeats.flush();
  }

  /** One step of every background worker, as `ark-cp serve` runs them on their intervals. */
  async workers(): Promise<void> {
    await this.#watcher.step();
    await this.services.x402.advanceOpen();
    await this.#payer.step();
    await this.services.jobs.sweeps.runOnce(this.clock.now());
  }

  async close(): Promise<void> {
    await this.services.close();
  }
}
