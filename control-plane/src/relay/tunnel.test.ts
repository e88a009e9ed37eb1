import type { RelayAgentMessage } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { RelayStreamError, RelayTunnel } from './tunnel.js';

const MACHINE = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
const request = {
  job_id: '33333333-3333-4333-8333-333333333333',
  fence: '1',
  method: 'POST' as const,
  path: '/v1/chat/completions' as const,
  first_byte_timeout_ms: 1000,
  total_timeout_ms: 1000,
};

/** A tunnel whose sent frames are recorded; `connected` decides whether the machine's socket is held. */
function tunnelWithWire(connected = true) {
  const sent: Array<{ machineId: string; body: Record<string, unknown> }> = [];
  const tunnel = new RelayTunnel((machineId, body) => {
    sent.push({ machineId, body });
    return connected;
  });
  return { tunnel, sent };
}

const frame = (msg: Record<string, unknown>) => ({ v: 1, sid: 's', seq: 1, ...msg }) as unknown as RelayAgentMessage;

async function read(body: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('RelayTunnel', () => {
  it('opens a stream on the machine, resolves at relay_head and passes the pieces through in order until relay_end', async () => {
    const { tunnel, sent } = tunnelWithWire();
    const { response } = tunnel.open(MACHINE, { ...request, body: Buffer.from('{}').toString('base64') });
    expect(sent[0]).toMatchObject({ machineId: MACHINE, body: { t: 'relay_open', job_id: request.job_id, path: '/v1/chat/completions' } });
    const streamId = sent[0]?.body.stream_id as string;
    expect(streamId).toMatch(/^[A-Za-z0-9_-]+$/);
    tunnel.receive(MACHINE, frame({ t: 'relay_head', stream_id: streamId, status: 200, content_type: 'text/event-stream' }));
    const answer = await response;
    expect(answer).toMatchObject({ status: 200, contentType: 'text/event-stream' });
    tunnel.receive(MACHINE, frame({ t: 'relay_data', stream_id: streamId, data: Buffer.from('data: 1\n\n').toString('base64') }));
    tunnel.receive(MACHINE, frame({ t: 'relay_data', stream_id: streamId, data: Buffer.from('data: [DONE]\n\n').toString('base64') }));
    tunnel.receive(MACHINE, frame({ t: 'relay_end', stream_id: streamId }));
    expect(await read(answer.body)).toBe('data: 1\n\ndata: [DONE]\n\n');
    expect(tunnel.openCount).toBe(0);
  });

  it('ignores frames for the stream from another machine, and frames of unknown streams', async () => {
    const { tunnel, sent } = tunnelWithWire();
    const { response } = tunnel.open(MACHINE, request);
    const streamId = sent[0]?.body.stream_id as string;
    tunnel.receive(OTHER, frame({ t: 'relay_head', stream_id: streamId, status: 500, content_type: 'text/plain' }));
    tunnel.receive(MACHINE, frame({ t: 'relay_end', stream_id: 'unknown' }));
    tunnel.receive(MACHINE, frame({ t: 'relay_head', stream_id: streamId, status: 200, content_type: 'application/json' }));
    expect((await response).status).toBe(200);
  });

  it('fails at once when the machine is not connected here, and with the agent’s reason when the engine never answered', async () => {
    const offline = tunnelWithWire(false);
    await expect(offline.tunnel.open(MACHINE, request).response).rejects.toMatchObject({ reason: 'disconnected' });
    expect(offline.tunnel.openCount).toBe(0);

    const { tunnel, sent } = tunnelWithWire();
    const { response } = tunnel.open(MACHINE, request);
    tunnel.receive(MACHINE, frame({ t: 'relay_end', stream_id: sent[0]?.body.stream_id, error: 'timeout', detail: 'no answer in time' }));
    const error = await response.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RelayStreamError);
    expect(error).toMatchObject({ reason: 'timeout', message: 'no answer in time' });
  });

  it('a lost connection cuts the streams of that machine only; cancel tells the agent and ends the body', async () => {
    const { tunnel, sent } = tunnelWithWire();
    const first = tunnel.open(MACHINE, request);
    const second = tunnel.open(OTHER, request);
    const [firstId, secondId] = [sent[0]?.body.stream_id, sent[1]?.body.stream_id];
    tunnel.receive(MACHINE, frame({ t: 'relay_head', stream_id: firstId, status: 200, content_type: 'text/event-stream' }));
    tunnel.receive(OTHER, frame({ t: 'relay_head', stream_id: secondId, status: 200, content_type: 'text/event-stream' }));
    const [a, b] = await Promise.all([first.response, second.response]);
    const cut = new Promise((resolve) => a.body.once('error', resolve));
    tunnel.machineGone(MACHINE);
    expect(await cut).toMatchObject({ reason: 'disconnected' });
    expect(tunnel.openCount).toBe(1);

    second.cancel();
    expect(sent.at(-1)).toEqual({ machineId: OTHER, body: { t: 'relay_cancel', stream_id: secondId } });
    expect(b.body.destroyed).toBe(true);
    expect(tunnel.openCount).toBe(0);
  });
});
