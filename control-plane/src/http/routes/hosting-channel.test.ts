import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { ed25519PublicKeyToBase64, nodeEd25519Signer } from '@ark/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { RawAgent } from '../../gateway/testing/raw-agent.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { sampleManifest } from '../../testing/hosting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;

/** The host side wired through the real gateway: enroll over HTTP, then speak the channel as an agent would. */
describe.each(DIALECTS)('hosting over the agent channel on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let owner: SeededAccount;
  let baseUrl: string;

  beforeAll(async () => {
    t = await createTestApp(dialect);
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
    owner = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });

  /** Acks are cumulative (heartbeats are answered with one too): wait for the one covering `id`. */
  async function ackedUpto(agent: RawAgent, id: number): Promise<number> {
    for (;;) {
      const ack = await agent.next('ack');
      if (ack.upto >= id) return ack.upto;
    }
  }

  async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    for (let i = 0; i < 100; i++) {
      const value = await read();
      if (done(value)) return value;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error('condition not reached');
  }

  it('heartbeats make the machine live, telemetry lands in buckets, a nettest round-trips', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const publicKeyBase64 = ed25519PublicKeyToBase64(privateKey);
    const token = await t.app.inject({
      method: 'POST',
      url: '/api/v1/hosts/enrollment-tokens',
      headers: { ...bearer(owner.apiKey), 'idempotency-key': randomUUID() },
    });
    const enrolled = await t.app.inject({
      method: 'POST',
      url: '/api/v1/agents/enroll',
      payload: { enrollment_token: token.json().enrollment_token, public_key: publicKeyBase64, manifest: sampleManifest() },
    });
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    const { machine_id, control_plane_public_key, channel_url } = enrolled.json();
    expect(channel_url).toMatch(/^ws:\/\/.*\/api\/v1\/agents\/channel\?v=1$/);

    const agent = await RawAgent.connect(
      baseUrl,
      { id: machine_id, privateKey, publicKeyBase64, sign: nodeEd25519Signer(privateKey) },
      control_plane_public_key,
    );
    await agent.handshake();
    agent.heartbeat();
    const machine = () =>
      t.app
        .inject({ method: 'GET', url: `/api/v1/hosts/machines/${machine_id}`, headers: bearer(owner.apiKey) })
        .then((r) => r.json() as Json);
    const live = await until(machine, (m) => m.live === 'live');
    expect(live).toMatchObject({ liveness: 'online', healthy: true, offer: { listed: true, readiness: 'ready' } });

    agent.send({
      t: 'telemetry',
      id: 1,
      samples: [
        {
          at: t.clock.now().toISOString(),
          host: { cpu_utilization_pct: 12.5 },
          devices: [{ pci_address: '00000000:01:00.0', temperature_c: 50 }],
        },
      ],
    });
    expect(await ackedUpto(agent, 1)).toBe(1);
    const telemetry = await t.app.inject({
      method: 'GET',
      url: `/api/v1/hosts/machines/${machine_id}/telemetry?window=1h`,
      headers: bearer(owner.apiKey),
    });
    expect(telemetry.json().buckets).toEqual([
      {
        bucket: t.clock.now().toISOString(),
        samples: 1,
        devices: [{ pci_address: '00000000:01:00.0', temperature_c: { min: 50, avg: 50, max: 50 } }],
        host: { cpu_utilization_pct: { min: 12.5, avg: 12.5, max: 12.5 } },
      },
    ]);

    const queued = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${machine_id}/nettest`,
      headers: { ...bearer(owner.apiKey), 'idempotency-key': randomUUID() },
    });
    expect(queued.statusCode, queued.body).toBe(202);
    const command = await agent.next('command');
    expect(command).toMatchObject({ kind: 'run_nettest', command_id: queued.json().command_id, body: { timeout_ms: 30_000 } });
    agent.send({
      t: 'nettest_receipt',
      id: 2,
      command_id: command.command_id,
      measured_at: t.clock.now().toISOString(),
      duration_ms: 9000,
      download_mbps: 800,
      upload_mbps: 300,
      latency_ms: 4,
    });
    expect(await ackedUpto(agent, 2)).toBe(2);
    const measured = await machine();
    expect(measured.network).toEqual({
      download_mbps: 800,
      upload_mbps: 300,
      latency_ms: 4,
      measured_at: t.clock.now().toISOString(),
      error: null,
    });
    expect(measured.offer.measured_bandwidth_mbps).toBe('300');
    agent.close();
    await agent.closed;
  });
});
