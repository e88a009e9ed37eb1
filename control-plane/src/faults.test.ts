import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config/index.js';
import { FAULT_POINTS, type FaultPoint, faultsConfigFrom, faultsOf, noFaults } from './faults.js';

// The fault seam (faults.ts) is a test facility: off unless ARK_FAULT_EXIT_AT is set, and a server started with it
// under NODE_ENV=production refuses to start. The points themselves are exercised end to end by
// test/e2e/payouts-crash.test.ts and test/e2e/deposits.test.ts, where the real process kills itself at them.

const fail = (message: string) => new Error(message);
const base = { ARK_SECRET_KEY: randomBytes(32).toString('hex'), ARK_DATA_DIR: '/nonexistent/ark-test', LOG_LEVEL: 'silent' };

/** Faults over a recording exit, and the points at which it was called. */
function recorded(exitAt: FaultPoint | null): { reach(point: FaultPoint): void; exits: FaultPoint[] } {
  const exits: FaultPoint[] = [];
  let current: FaultPoint | null = null;
  const faults = faultsOf({ exitAt }, () => void exits.push(current as FaultPoint));
  return {
    exits,
    reach(point) {
      current = point;
      faults.reached(point);
    },
  };
}

describe('the fault seam', () => {
  it('is off by default: no variable, no configured point, and reaching every point does nothing', () => {
    expect(faultsConfigFrom({}, fail)).toEqual({ exitAt: null });
    expect(faultsConfigFrom({ ARK_FAULT_EXIT_AT: '  ' }, fail)).toEqual({ exitAt: null });
    expect(loadConfig(base).faults).toEqual({ exitAt: null });
    expect(faultsOf({ exitAt: null })).toBe(noFaults);
    const off = recorded(null);
    for (const point of FAULT_POINTS) off.reach(point);
    expect(off.exits).toEqual([]);
  });

  it('exits at the configured point only', () => {
    for (const exitAt of FAULT_POINTS) {
      expect(faultsConfigFrom({ ARK_FAULT_EXIT_AT: exitAt, NODE_ENV: 'test' }, fail)).toEqual({ exitAt });
      const faults = recorded(exitAt);
      for (const point of FAULT_POINTS) faults.reach(point);
      expect(faults.exits).toEqual([exitAt]);
    }
  });

  it('refuses an unknown point, naming the variable and the points it accepts', () => {
    expect(() => faultsConfigFrom({ ARK_FAULT_EXIT_AT: 'payout.sent' }, fail)).toThrow(
      'ARK_FAULT_EXIT_AT must be one of payout.pinned, payout.broadcast, job.credit, got "payout.sent"',
    );
  });

  it('is refused with NODE_ENV=production, while production without it loads', () => {
    expect(() => faultsConfigFrom({ ARK_FAULT_EXIT_AT: 'payout.pinned', NODE_ENV: 'production' }, fail)).toThrow(
      /ARK_FAULT_EXIT_AT is a test facility .* refused with NODE_ENV=production/,
    );
    expect(() => loadConfig({ ...base, NODE_ENV: 'production', ARK_FAULT_EXIT_AT: 'payout.broadcast' })).toThrow(ConfigError);
    expect(loadConfig({ ...base, NODE_ENV: 'production' }).faults).toEqual({ exitAt: null });
  });

  it('stops `ark-cp serve` at start under NODE_ENV=production: exit code 2, the reason on stderr', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ark-faults-'));
    try {
      const main = fileURLToPath(new URL('./main.ts', import.meta.url));
      const result = spawnSync(process.execPath, ['--import', 'tsx', main, 'serve'], {
        encoding: 'utf8',
        // A server that took the variable would start and listen: the wait ends it (and the test fails).
        timeout: 30_000,
        env: {
          PATH: process.env.PATH,
          ...base,
          ARK_DATA_DIR: dataDir,
          PORT: '0',
          NODE_ENV: 'production',
          ARK_FAULT_EXIT_AT: 'payout.pinned',
        },
      });
      expect(result.stderr).toContain('ark-cp: configuration error: ARK_FAULT_EXIT_AT is a test facility');
      expect(result.status).toBe(2);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
