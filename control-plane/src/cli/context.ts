import type { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import type { PayoutWallet } from '../chain/payout-wallet.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import { DomainError } from '../errors.js';
import type { Services } from '../services/index.js';
import type { Store } from '../store/db.js';

/** What every store command runs with: the configured store, migrated, and the services built over it. */
export interface CliContext {
  config: Config;
  logger: Logger;
  clock: Clock;
  store: Store;
  services: Services;
  /** The payout wallet on the primary network (runtime.ts `payoutWalletOf`); null when none is configured. */
  payoutWallet(): PayoutWallet | null;
  out(text: string): void;
  err(text: string): void;
}

export type CliValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

export interface CliCommand {
  /** e.g. "accounts create" */
  name: string;
  usage: string;
  options: NonNullable<Parameters<typeof parseArgs>[0]>['options'];
  /** The exit code. A CliRefusal or DomainError thrown here prints its problems and exits 1. */
  run(values: CliValues, ctx: CliContext): Promise<number>;
}

/** A refusal the operator can act on: each problem printed as `ark-cp <command>: <problem>`, exit code 1, nothing written. */
export class CliRefusal extends Error {
  readonly problems: string[];
  constructor(problems: string | string[]) {
    const list = typeof problems === 'string' ? [problems] : problems;
    super(list.join('\n'));
    this.name = 'CliRefusal';
    this.problems = list;
  }
}

/** How a domain refusal reads to an operator, where the catalog's sentence is written for API clients. */
const OPERATOR_WORDING: Partial<Record<DomainError['code'], string>> = {
  EMAIL_TAKEN: 'an account with this email already exists',
};

/** The lines an operator sees for a refusal, or null when the error is not one (a bug or an outage: it propagates). */
export function refusalLines(error: unknown): string[] | null {
  if (error instanceof CliRefusal) return error.problems;
  if (error instanceof DomainError) return [OPERATOR_WORDING[error.code] ?? error.message];
  return null;
}

export function text(values: CliValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A required option; missing or empty is a refusal. */
export function required(values: CliValues, name: string): string {
  const value = text(values, name);
  if (value === undefined || value === '') throw new CliRefusal(`--${name} is required`);
  return value;
}

/** Prints a command's result as indented JSON. */
export function printJson(ctx: Pick<CliContext, 'out'>, result: unknown): void {
  ctx.out(`${JSON.stringify(result, null, 2)}\n`);
}
