import { pino } from 'pino';
import { ManualClock } from '../clock.js';
import type { Config } from '../config/index.js';
import { payoutWalletOf, serviceAdapters } from '../runtime.js';
import { buildServices } from '../services/index.js';
import { fakeReadinessProbes } from '../testing/readiness.js';
import type { Store } from '../store/db.js';
import { testConfig } from '../testing/app.js';
import type { CliContext } from './context.js';

export interface TestCliContext extends CliContext {
  clock: ManualClock;
  /** What the command printed, in order. */
  stdout: string[];
  stderr: string[];
  /** Closes the services (not the store: the test owns it). */
  close(): Promise<void>;
}

/** The context a command gets, over a test's store, with a manual clock at `now` and captured output. */
export function testCliContext(store: Store, now: Date, config: Config = testConfig()): TestCliContext {
  const clock = new ManualClock(now);
  const stdout: string[] = [];
  const stderr: string[] = [];
  const services = buildServices({
    store,
    clock,
    config,
    mailer: { send: async () => {} },
    ...serviceAdapters(config, clock),
    readinessProbes: fakeReadinessProbes(clock),
    x402Chain: null,
    walletCode: null,
  });
  return {
    config,
    logger: pino({ level: 'silent' }),
    clock,
    store,
    services,
    payoutWallet: () => payoutWalletOf(config),
    out: (text) => void stdout.push(text),
    err: (text) => void stderr.push(text),
    stdout,
    stderr,
    close: () => services.close(),
  };
}
