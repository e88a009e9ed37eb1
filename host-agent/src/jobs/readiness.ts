// Readiness as the agent verifies it: the template's health port answers (a TCP connect, or an HTTP
// GET of its path), and for model templates the engine lists its models when asked with the job's key.
import { request } from 'node:http';
import { connect } from 'node:net';

/** Bytes of a probe's answer read; the rest is discarded. */
const PROBE_BODY_MAX_BYTES = 64 * 1024;

export type ReadinessPlan = {
  /** Where the agent reaches published ports, normally 127.0.0.1. */
  host: string;
  health?: { port: number; path?: string };
  models?: { port: number; apiKey: string };
};

export class NotReadyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotReadyError';
  }
}

export function probeTcp(host: string, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new NotReadyError(`tcp ${port}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new NotReadyError(`tcp ${port}: ${error.code ?? error.message}`));
    });
  });
}

export type HttpAnswer = { status: number; body: string };

export function probeHttp(
  host: string,
  port: number,
  path: string,
  timeoutMs: number,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, method: 'GET', headers: { accept: '*/*', ...headers }, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < PROBE_BODY_MAX_BYTES) chunks.push(chunk.subarray(0, PROBE_BODY_MAX_BYTES - size));
        size += chunk.length;
      });
      res.once('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.once('error', (error) => {
        clearTimeout(timer);
        reject(new NotReadyError(`http ${port}${path}: ${error.message}`));
      });
    });
    // The socket timeout covers idleness; this one covers the whole exchange.
    const timer = setTimeout(() => req.destroy(new NotReadyError(`http ${port}${path}: no answer within ${timeoutMs} ms`)), timeoutMs);
    req.once('timeout', () => req.destroy(new NotReadyError(`http ${port}${path}: no answer within ${timeoutMs} ms`)));
    req.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(error instanceof NotReadyError ? error : new NotReadyError(`http ${port}${path}: ${error.code ?? error.message}`));
    });
    req.end();
  });
}

/** One pass over the plan; throws NotReadyError naming the first check that failed. */
export async function checkReadiness(plan: ReadinessPlan, probeTimeoutMs: number): Promise<Record<string, string>> {
  const evidence: Record<string, string> = {};
  if (plan.health !== undefined) {
    const { port, path } = plan.health;
    if (path === undefined) {
      await probeTcp(plan.host, port, probeTimeoutMs);
      evidence.health = `tcp connect :${port}`;
    } else {
      const answer = await probeHttp(plan.host, port, path, probeTimeoutMs);
      if (answer.status < 200 || answer.status >= 400) throw new NotReadyError(`http ${port}${path}: status ${answer.status}`);
      evidence.health = `http ${answer.status}`;
    }
  }
  if (plan.models !== undefined) {
    const answer = await probeHttp(plan.host, plan.models.port, '/v1/models', probeTimeoutMs, {
      authorization: `Bearer ${plan.models.apiKey}`,
    });
    if (answer.status !== 200) throw new NotReadyError(`model list: status ${answer.status}`);
    let count: number;
    try {
      const data = (JSON.parse(answer.body) as { data?: unknown }).data;
      if (!Array.isArray(data)) throw new Error('no data array');
      count = data.length;
    } catch {
      throw new NotReadyError('model list: not an OpenAI-style model list');
    }
    if (count === 0) throw new NotReadyError('model list: no model loaded yet');
    evidence.models = `http 200, ${count} model(s)`;
  }
  return evidence;
}
