// What an operator reads: `ark-cp serve` on a terminal writes one readable line per request (pino-pretty), and JSON
// (one object per line, one per request) everywhere else; ARK_LOG_FORMAT chooses against the default.
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../harness/processes.js';
import { type ControlPlane, startControlPlane } from './host-side-helpers.js';

describe('the control plane log on stdout', () => {
  let cp: ControlPlane | undefined;
  afterEach(async () => {
    await cp?.process.stop('SIGTERM');
    cp = undefined;
  });

  it('is one readable line per request with ARK_LOG_FORMAT=pretty', async () => {
    cp = await startControlPlane({ env: { ARK_LOG_FORMAT: 'pretty', LOG_LEVEL: 'info' } });
    const answered = await fetch(`${cp.base}/api/v1/templates?kind=model`);
    expect(answered.status).toBe(200);
    const started = cp;
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the colours pino-pretty writes are ANSI escapes
    const plain = () => started.process.output().replace(/\u001b\[[0-9;]*m/g, '');
    const line = await waitFor(
      () =>
        plain()
          .split('\n')
          .find((l) => l.includes('GET /api/v1/templates?kind=model')),
      {
        timeoutMs: 10_000,
        description: 'the request line',
      },
    );
    expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO.*: GET \/api\/v1\/templates\?kind=model 200 \d+\.\d ms/);
    expect(
      plain()
        .split('\n')
        .filter((l) => l.includes('/api/v1/templates?kind=model')),
    ).toHaveLength(1);
  });

  it('is one JSON object per request by default when stdout is no terminal', async () => {
    cp = await startControlPlane({ env: { LOG_LEVEL: 'info' } });
    const answered = await fetch(`${cp.base}/api/v1/templates?kind=classical`);
    expect(answered.status).toBe(200);
    const started = cp;
    const lines = () =>
      started.process
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{') && l.includes('kind=classical'))
        .map((l) => JSON.parse(l) as Record<string, any>);
    await waitFor(() => lines().length > 0, { timeoutMs: 10_000, description: 'the request line' });
    expect(lines()).toEqual([
      expect.objectContaining({
        msg: 'request completed',
        req: expect.objectContaining({ method: 'GET', url: '/api/v1/templates?kind=classical' }),
        res: { statusCode: 200 },
      }),
    ]);
  });
});
