import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { lazyChildLoggerFactory } from './lazy-logger.js';

/** The lines a Fastify app with this logger level writes for a few requests, times and pids left out. */
async function linesWith(level: string, factory?: typeof lazyChildLoggerFactory): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        const { time: _time, pid: _pid, hostname: _host, responseTime: _rt, ...rest } = JSON.parse(line);
        lines.push(rest);
      }
      done();
    },
  });
  let id = 0;
  const app = Fastify({
    loggerInstance: pino({ level }, sink),
    genReqId: () => `req-${++id}`,
    ...(factory ? { childLoggerFactory: factory } : {}),
  });
  app.get('/quiet', async () => ({ ok: true }));
  app.get('/noisy', async (request) => {
    request.log.info({ step: 1 }, 'working');
    request.log.warn('careful');
    request.log.child({ part: 'inner' }).error('inner failure');
    return { level: request.log.level };
  });
  app.get('/own-level', { logLevel: 'debug' }, async (request) => {
    request.log.debug('debugging this route');
    return {};
  });
  for (const url of ['/quiet', '/noisy', '/own-level', '/nowhere']) await app.inject({ url });
  await app.close();
  return lines;
}

describe('the lazy request logger', () => {
  it('writes exactly what pino children write, at warn and at info', async () => {
    for (const level of ['warn', 'info']) {
      const eager = await linesWith(level);
      const lazy = await linesWith(level, lazyChildLoggerFactory);
      expect(lazy).toEqual(eager);
      // Every line of a request carries its id (and a grandchild its own bindings too).
      expect(lazy).toContainEqual(expect.objectContaining({ reqId: 'req-2', part: 'inner', msg: 'inner failure' }));
      expect(lazy).toContainEqual(expect.objectContaining({ reqId: 'req-3', msg: 'debugging this route' }));
    }
    const atWarn = await linesWith('warn', lazyChildLoggerFactory);
    // At warn, only the noisy route's warnings and the route with its own debug level write anything.
    expect(atWarn.map((l) => l.msg)).toEqual(['careful', 'inner failure', 'incoming request', 'debugging this route', 'request completed']);
  });
});
