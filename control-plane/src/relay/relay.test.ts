import type { RelayAgentMessage } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import type { RelayConfig } from '../config/relay.js';
import type { JobRecord } from '../domain/jobs/job.js';
import { JobRelay } from './relay.js';
import { RelayTunnel } from './tunnel.js';

// The relay's own timeouts on a manual clock: the test advances past them instead of waiting minutes.

const MACHINE = '11111111-1111-4111-8111-111111111111';
const config: RelayConfig = { maxBodyBytes: 1024, firstByteTimeoutMs: 120_000, maxStreamMs: 900_000, maxStreamsPerJob: 1 };
// What the relay reads of a job: it answers only RUNNING jobs of model templates.
const job = { id: '33333333-3333-4333-8333-333333333333', machineId: MACHINE, fence: 1n, state: 'RUNNING', template: { kind: 'model' } };
const call = { job: job as unknown as JobRecord, method: 'POST' as const, path: '/v1/chat/completions' as const, body: null };

function relayOnWire() {
  const clock = new ManualClock();
  const sent: Array<Record<string, unknown>> = [];
  const tunnel = new RelayTunnel((_machineId, body) => {
    sent.push(body);
    return true;
  });
  return { clock, sent, tunnel, relay: new JobRelay(tunnel, config, clock) };
}

const frame = (msg: Record<string, unknown>) => ({ v: 1, sid: 's', seq: 1, ...msg }) as unknown as RelayAgentMessage;

describe('the relay on a manual clock', () => {
  it('answers RELAY_ENGINE_TIMEOUT when the machine never answers, 5 s after the first-byte timeout, and frees the slot', async () => {
    const { clock, sent, tunnel, relay } = relayOnWire();
    let outcome: unknown = 'pending';
    const answer = relay.call(call).then(
      () => 'answered',
      (error: unknown) => error,
    );
    void answer.then((value) => {
      outcome = value;
    });
    await clock.advance(config.firstByteTimeoutMs + 4_999);
    expect(outcome).toBe('pending');
    // The job's one stream slot is taken meanwhile.
    await expect(relay.call(call)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await clock.advance(1);
    expect(await answer).toMatchObject({ code: 'RELAY_ENGINE_TIMEOUT' });
    expect(sent.map((m) => m.t)).toEqual(['relay_open', 'relay_cancel']);
    expect(tunnel.openCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    // The slot is free again.
    void relay.call(call).catch(() => {});
    expect(tunnel.openCount).toBe(1);
  });

  it('cancels an answer still streaming when the whole-stream limit passes, and clears its timers once it ends', async () => {
    const { clock, sent, tunnel, relay } = relayOnWire();
    const pending = relay.call(call);
    const streamId = sent[0]?.stream_id as string;
    tunnel.receive(MACHINE, frame({ t: 'relay_head', stream_id: streamId, status: 200, content_type: 'text/event-stream' }));
    const answer = await pending;
    expect(answer.status).toBe(200);
    // The first-byte timer went with the head; the whole-stream one waits.
    expect(clock.peek()).toBe(config.maxStreamMs);
    await clock.advance(config.maxStreamMs - 1);
    expect(sent.map((m) => m.t)).toEqual(['relay_open']);
    await clock.advance(1);
    expect(sent.map((m) => m.t)).toEqual(['relay_open', 'relay_cancel']);
    expect(answer.body.destroyed).toBe(true);
    expect(tunnel.openCount).toBe(0);
    // The job's slot is released when the body's close is emitted (on the next tick).
    await new Promise((resolve) => setImmediate(resolve));

    // An answer that ends in time leaves no timer behind.
    const next = relay.call(call);
    const nextId = sent[2]?.stream_id as string;
    tunnel.receive(MACHINE, frame({ t: 'relay_head', stream_id: nextId, status: 200, content_type: 'application/json' }));
    const done = await next;
    tunnel.receive(MACHINE, frame({ t: 'relay_end', stream_id: nextId }));
    done.body.resume();
    await new Promise((resolve) => done.body.once('close', resolve));
    expect(clock.pendingTimers).toBe(0);
  });
});
