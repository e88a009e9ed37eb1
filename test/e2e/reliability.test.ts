// Machine reliability over real processes, on each store: a control plane scoring every half second over a 60-second
// window with a 1-second heartbeat (so a 3-second liveness grace), and a real `ark-agent run`. The agent is killed by
// its PID long enough to fall under the 0.9 floor (a floor with room for a loaded CI machine's late heartbeats): the
// machine disappears from GET /api/v1/offers and its host's machine view says why; once the agent runs again and the
// silence has left the window, the machine is offered again.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import type { SpawnedProcess } from '../harness/processes.js';
import {
  type AgentSetup,
  type ControlPlane,
  agentSetup,
  api,
  controlPlaneCli,
  hostSession,
  nvidiaSmiFixture,
  pairAgent,
  startAgent,
  startControlPlane,
  waitWhileRunning,
} from './host-side-helpers.js';

const DIALECTS = ['sqlite', 'postgres'] as const;

async function renterSession(cp: ControlPlane): Promise<string> {
  const email = `renter-${randomUUID().slice(0, 8)}@example.test`;
  const password = 'correct horse battery staple';
  await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'renter', '--password', password, '--verified']);
  const signIn = await api(cp.base, 'POST', '/api/v1/auth/sessions', { body: { email, password } });
  if (signIn.status !== 200 && signIn.status !== 201) throw new Error(`sign-in failed: ${signIn.status} ${JSON.stringify(signIn.body)}`);
  return signIn.body.session_token as string;
}

describe.each(DIALECTS)('machine reliability over real processes on %s', (dialect) => {
  let database: TestDatabase | undefined;
  let cp: ControlPlane;
  let hostToken: string;
  let renterToken: string;
  let setup: AgentSetup;
  let agent: SpawnedProcess | undefined;

  beforeAll(async () => {
    if (dialect === 'postgres') database = await createTestDatabase();
    cp = await startControlPlane({
      databaseUrl: database?.url ?? null,
      env: {
        ARK_HEARTBEAT_INTERVAL_S: '1',
        ARK_RELIABILITY_FLOOR: '0.9',
        ARK_RELIABILITY_WINDOW_S: '60',
        ARK_RELIABILITY_MIN_HISTORY_S: '0',
        ARK_RELIABILITY_INTERVAL_MS: '500',
      },
    });
    hostToken = await hostSession(cp);
    renterToken = await renterSession(cp);
    setup = agentSetup(
      { heartbeat_interval_s: 1, require_docker: false, min_disk_free_bytes: 0 },
      { ARK_AGENT_NVIDIA_SMI_FIXTURE: nvidiaSmiFixture, ARK_AGENT_LOG_LEVEL: 'info' },
    );
  });

  afterAll(async () => {
    await agent?.stop('SIGTERM');
    await cp?.process.stop('SIGTERM');
    await database?.drop();
    if (setup !== undefined) rmSync(dirname(setup.stateDir), { recursive: true, force: true });
    if (cp !== undefined) rmSync(cp.dataDir, { recursive: true, force: true });
  });

  it('a machine whose agent is stopped falls under the floor, leaves the offers, and comes back when it recovers', {
    timeout: 180_000,
  }, async () => {
    const { machineId } = await pairAgent(cp, hostToken, setup);
    agent = startAgent(setup, ['run']);
    const offered = async () => {
      const answer = await api(cp.base, 'GET', '/api/v1/offers?limit=100&include=reliability', { token: renterToken });
      if (answer.status !== 200) throw new Error(`offers answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return (answer.body.items as Array<{ machine_id: string; reliability?: { score: string; new: boolean } }>).find(
        (o) => o.machine_id === machineId,
      );
    };
    const machine = async () => (await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token: hostToken })).body;

    // Live and scored from its heartbeats (before the first one it is new, with nothing counted): listed with its score.
    const first = await waitWhileRunning(agent, async () => ((await offered())?.reliability?.new === false ? offered() : undefined), {
      timeoutMs: 60_000,
      intervalMs: 250,
      description: 'the machine to be offered with a reliability score',
    });
    expect(first?.reliability).toEqual({ score: '1.0000', new: false });
    // Online a few seconds first: a second or two of silence past the grace then falls under 0.9.
    await new Promise((resolve) => setTimeout(resolve, 5_000));

    // The agent is killed by its PID: no more heartbeats.
    process.kill(agent.pid, 'SIGKILL');
    await agent.exited;
    const silentSince = Date.now();
    const held = await waitFor(async () => {
      const view = await machine();
      return view.reliability_hold ? view : undefined;
    }, 30_000);
    expect(held.reliability_hold).toMatchObject({ reason: 'below_reliability_floor', floor: '0.9000' });
    expect(Number(held.reliability.score)).toBeLessThan(0.9);
    expect(await offered()).toBeUndefined();
    // Silent for at least 15 seconds (12 past the grace) before the agent runs again: with a history of a few seconds
    // when it was killed, a short gap would be diluted under 10 % by the growing history (score = online / counted)
    // before the 60-second window is even full, and the machine would come back before its silence left the window.
    const silentFor = Date.now() - silentSince;
    if (silentFor < 15_000) await new Promise((resolve) => setTimeout(resolve, 15_000 - silentFor));

    // The agent runs again; the machine comes back once its silence has slid out of the 60-second window.
    agent = startAgent(setup, ['run']);
    const back = await waitWhileRunning(agent, offered, {
      timeoutMs: 120_000,
      intervalMs: 500,
      description: 'the machine to be offered again',
    });
    expect(Number(back?.reliability?.score)).toBeGreaterThanOrEqual(0.9);
    // Not before the silence (12 seconds or more past the 3-second grace) could leave the 60-second window.
    expect(Date.now() - silentSince).toBeGreaterThan(50_000);
    const view = await machine();
    expect(view.reliability_hold).toBeNull();
    expect(view.liveness).toBe('online');
  });
});

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
