import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { WebhookSender, WebhookServices } from '../services/webhooks/index.js';
import type { Worker } from './runner.js';

/** The most of a receiver's answer that is read (and then dropped): a receiver cannot make a worker read forever. */
const ANSWER_BYTES_MAX = 4096;

/**
 * The real sender: one POST over http(s), connecting only to the addresses the service checked (the lookup below
 * answers them instead of resolving the name again), no redirects followed, the whole exchange bounded by the
 * timeout and the answer by ANSWER_BYTES_MAX.
 */
export const httpWebhookSender: WebhookSender = ({ url, addresses, headers, body, timeoutMs }) =>
  new Promise((resolve) => {
    const pinned: LookupFunction = (_host, options, callback) => {
      const all = addresses.map((address) => ({ address, family: isIP(address) }));
      if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: typeof all) => void)(null, all);
      else callback(null, all[0]?.address ?? '', all[0]?.family ?? 4);
    };
    const target = new URL(url);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    let settled = false;
    const finish = (status: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, error });
    };
    const req = send(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinned,
        agent: false,
      },
      (res) => {
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > ANSWER_BYTES_MAX) res.destroy();
        });
        res.on('close', () => finish(res.statusCode ?? null, res.statusCode === undefined ? 'no status' : null));
        res.on('error', () => finish(res.statusCode ?? null, null));
      },
    );
    // A deadline on a real socket, like fetch's AbortSignal.timeout: Node's timer, not the clock (a manual clock would
    // stall the test instead of the receiver). When deliveries are due is the service's decision, on the clock.
    const timer = setTimeout(() => {
      req.destroy();
      finish(null, `no answer within ${timeoutMs} ms`);
    }, timeoutMs);
    req.on('error', (error) => finish(null, error.message));
    req.end(body);
  });

/**
 * The delivery worker (every replica runs it; leases in the store keep one attempt per delivery) and the history purge.
 * `send` is the composition root's sender (httpWebhookSender, chosen in runtime.ts).
 */
export function webhookWorkers(webhooks: WebhookServices, send: WebhookSender): Worker[] {
  return [
    {
      name: 'webhook-delivery',
      intervalMs: webhooks.settings.pollIntervalMs,
      // The runner logs a positive number: attempts made in this step.
      step: async () => (await webhooks.deliverDue(send)).attempted,
    },
    // A third of the heartbeat interval, as the job liveness sweep: a change is told within about one interval.
    {
      name: 'webhook-machine-liveness',
      intervalMs: Math.max(1000, Math.floor(webhooks.heartbeatIntervalMs / 3)),
      step: () => webhooks.tellLivenessChanges(),
    },
    { name: 'webhook-history-purge', intervalMs: 60 * 60_000, step: (_store, now) => webhooks.purgeHistory(now) },
  ];
}
