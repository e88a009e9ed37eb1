import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeIdentity, writeStatus } from '../state.js';
import type { CliContext } from './context.js';
import { statusCommand } from './status.js';

describe('ark-agent status', () => {
  let stateDir: string;
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'ark-status-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it("shows the daemon's last self-test: its number, trigger, outcome and headline figures", async () => {
    const key = Buffer.alloc(32, 1).toString('base64');
    await writeIdentity(stateDir, {
      version: 1,
      machine_id: 'm-1',
      public_key: key,
      secret_key: Buffer.alloc(64, 1).toString('base64'),
      control_plane_public_key: key,
      channel_url: 'ws://127.0.0.1:1/agent',
      control_plane_url: 'http://127.0.0.1:1',
      enrolled_at: '2026-11-27T12:00:00.000Z',
    });
    const report = { pid: 1, agent_version: '0.1.0', started_at: 'x', updated_at: 'y', machine_id: 'm-1' };
    const out: string[] = [];
    const ctx = { config: { stateDir }, out: (text: string) => void out.push(text), isProcessAlive: () => false } as unknown as CliContext;

    await writeStatus(stateDir, {
      ...report,
      last_selftest: {
        receipt_seq: 7,
        trigger: 'daily',
        measured_at: '2026-11-27T12:00:00.000Z',
        ok: true,
        gpus: 2,
        matmul_gflops: 12.5,
        memory_bandwidth_gbps: 7.8,
      },
    });
    expect(await statusCommand(ctx, {})).toBe(0);
    expect(out.join('')).toMatch(/last self-test: +#7 \(daily\) 2026-11-27T12:00:00.000Z: ok, 2 GPU\(s\), 12.5 GFLOP\/s, 7.8 GB\/s\n/);

    out.length = 0;
    await writeStatus(stateDir, {
      ...report,
      last_selftest: {
        receipt_seq: 8,
        trigger: 'job_start',
        measured_at: '2026-11-27T13:00:00.000Z',
        ok: false,
        error: 'GPU identity check failed',
        gpus: 0,
      },
    });
    await statusCommand(ctx, {});
    expect(out.join('')).toMatch(/last self-test: +#8 \(job_start\) 2026-11-27T13:00:00.000Z: failed: GPU identity check failed\n/);
  });
});
