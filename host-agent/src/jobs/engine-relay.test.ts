import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RelayOpenMessage } from '@ark/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { EngineRelay, type EngineTarget, type RelayReply } from './engine-relay.js';

const KEY = 'k'.repeat(43);
const JOB = '33333333-3333-4333-8333-333333333333';

/** A loopback engine: answers /v1/models as JSON and /v1/chat/completions as three events, 30 ms apart. */
async function engine(): Promise<{ server: Server; port: number; seen: Array<{ auth?: string; body: string }>; aborted: () => boolean }> {
  const seen: Array<{ auth?: string; body: string }> = [];
  let aborted = false;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', async () => {
      seen.push({ ...(req.headers.authorization === undefined ? {} : { auth: req.headers.authorization }), body });
      if (req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.on('close', () => {
        aborted = !res.writableFinished;
      });
      for (const piece of ['data: a\n\n', 'data: b\n\n', 'data: [DONE]\n\n']) {
        if (res.destroyed) return;
        res.write(piece);
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, seen, aborted: () => aborted };
}

const open = (msg: Partial<RelayOpenMessage>): RelayOpenMessage => ({
  v: 1,
  t: 'relay_open',
  sid: 's',
  seq: 1,
  stream_id: 'st1',
  job_id: JOB,
  fence: '2',
  method: 'GET',
  path: '/v1/models',
  first_byte_timeout_ms: 2000,
  total_timeout_ms: 5000,
  ...msg,
});

function relayOver(target: EngineTarget | undefined) {
  const replies: RelayReply[] = [];
  let ended: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    ended = resolve;
  });
  const relay = new EngineRelay({
    target: (jobId, fence) => (jobId === JOB && fence === '2' ? target : undefined),
    send: (body) => {
      replies.push(body);
      if (body.t === 'relay_end') ended();
      return true;
    },
    logger: { warn: () => {} },
  });
  return { relay, replies, done };
}

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  servers = [];
});

describe('EngineRelay', () => {
  it('calls the engine with the job key and relays head, each piece and the end', async () => {
    const e = await engine();
    servers.push(e.server);
    const { relay, replies, done } = relayOver({ host: '127.0.0.1', port: e.port, apiKey: KEY });
    relay.handle(open({ method: 'POST', path: '/v1/chat/completions', body: Buffer.from('{"stream":true}').toString('base64') }));
    await done;
    expect(e.seen[0]).toEqual({ auth: `Bearer ${KEY}`, body: '{"stream":true}' });
    expect(replies[0]).toEqual({ t: 'relay_head', stream_id: 'st1', status: 200, content_type: 'text/event-stream' });
    const data = replies.filter((r) => r.t === 'relay_data').map((r) => Buffer.from((r as { data: string }).data, 'base64').toString());
    expect(data.join('')).toBe('data: a\n\ndata: b\n\ndata: [DONE]\n\n');
    // Written 30 ms apart by the engine, relayed as separate pieces.
    expect(data.length).toBeGreaterThanOrEqual(3);
    expect(replies.at(-1)).toEqual({ t: 'relay_end', stream_id: 'st1' });
  });

  it('refuses a job that is not running here under that fence, and reports an engine that does not answer', async () => {
    const stale = relayOver({ host: '127.0.0.1', port: 1, apiKey: KEY });
    stale.relay.handle(open({ fence: '1' }));
    await stale.done;
    expect(stale.replies).toEqual([{ t: 'relay_end', stream_id: 'st1', error: 'not_running', detail: expect.any(String) }]);

    const closed = relayOver({ host: '127.0.0.1', port: 1, apiKey: KEY });
    closed.relay.handle(open({}));
    await closed.done;
    expect(closed.replies).toEqual([{ t: 'relay_end', stream_id: 'st1', error: 'unreachable', detail: expect.any(String) }]);
  });

  it('relay_cancel aborts the engine request', async () => {
    const e = await engine();
    servers.push(e.server);
    const { relay, replies, done } = relayOver({ host: '127.0.0.1', port: e.port, apiKey: KEY });
    relay.handle(open({ method: 'POST', path: '/v1/chat/completions', body: Buffer.from('{}').toString('base64') }));
    while (!replies.some((r) => r.t === 'relay_data')) await new Promise((resolve) => setTimeout(resolve, 5));
    relay.handle({ v: 1, t: 'relay_cancel', sid: 's', seq: 2, stream_id: 'st1' });
    await done;
    expect(replies.at(-1)).toMatchObject({ t: 'relay_end', error: 'aborted' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(e.aborted()).toBe(true);
  });
});
