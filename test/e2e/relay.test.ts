// The OpenAI-compatible relay on real parts, on each store (issue 9): a model-kind template on the test engine
// (test/engine: a deterministic OpenAI-compatible server on Node, in the private dockerd with host networking) is
// quoted, reserved and RUNNING on a paired `ark-agent run`; the official `openai` client, pointed at the relay with
// the renter's own API key, gets a chat completion, streams one (chunks arrive while the engine is still writing),
// lists models and gets a legacy completion; the job's api_key from access works against the engine directly; limits,
// a client that leaves, an engine error mid-stream; after stop the relay refuses.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDockerAvailable } from '../harness/dockerd.js';
import { ENGINE_MODEL, expectedText, type ModelJob, startModelJob, withEngineWorld } from './relay-helpers.js';
import { freePort } from '../harness/processes.js';
import { api, startControlPlane } from './host-side-helpers.js';
import { DIALECTS, RentalSite } from './rental-helpers.js';

const TOKEN_DELAY_MS = 60;

describe.skipIf(!isDockerAvailable())('the OpenAI-compatible relay on real parts', () => {
  const rig = withEngineWorld();

  describe.each(DIALECTS)('on %s', (dialect) => {
    let site: RentalSite;
    let job: ModelJob;
    let client: OpenAI;

    beforeAll(async () => {
      // One open request per job: the limit is seen with two clients, and a left stream frees its slot.
      // On Postgres the site is one replica of two (ARK_REPLICA_URL): a second one joins in its own test.
      site = await RentalSite.start(dialect, rig.world, {
        cpEnv: { ARK_RELAY_MAX_STREAMS_PER_JOB: '1', ARK_RELAY_MAX_BODY_BYTES: '4096' },
        replica: dialect === 'postgres',
      });
      job = await startModelJob(site, rig.engine, { tokenDelayMs: TOKEN_DELAY_MS });
      client = new OpenAI({ apiKey: site.renterKey, baseURL: job.relayBase, maxRetries: 0, timeout: 30_000 });
    }, 240_000);

    afterAll(async () => {
      await site?.stop();
    }, 60_000);

    it('a model job is inference tier, its catalog entry says not to send sensitive data, and access carries the engine key', async () => {
      const view = await site.job(job.jobId);
      expect(view).toMatchObject({ state: 'RUNNING', tier: 'inference', template: { template_id: job.templateId, kind: 'model' } });
      const catalog = await api(site.cp.base, 'GET', '/api/v1/templates?kind=model&limit=100');
      const entry = catalog.body.items.find((item: any) => item.template_id === job.templateId);
      expect(entry).toMatchObject({ tier: 'inference', published: true });
      expect(entry.data_notice).toMatch(/sensitive data/);

      expect(job.access.mode).toBe('execution');
      expect(job.access.api_key).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // The key works against the engine directly, at the endpoint access names; without it the engine refuses.
      const endpoint = job.access.endpoints.find((e: any) => e.kind === 'http');
      expect(endpoint.external_port).toBe(job.enginePort);
      const direct = `http://${endpoint.external_host}:${endpoint.external_port}/v1/models`;
      const withKey = await fetch(direct, { headers: { authorization: `Bearer ${job.access.api_key}` } });
      expect(withKey.status).toBe(200);
      expect(((await withKey.json()) as { data: Array<{ id: string }> }).data[0]?.id).toBe(ENGINE_MODEL);
      expect((await fetch(direct, { headers: { authorization: `Bearer ${site.renterKey}` } })).status).toBe(401);
    });

    it('the official client gets a chat completion, a legacy completion and the model list through the relay', async () => {
      const prompt = 'alpha beta gamma';
      const chat = await client.chat.completions.create({
        model: ENGINE_MODEL,
        messages: [{ role: 'user', content: prompt }],
        max_tokens: 5,
      });
      expect(chat.object).toBe('chat.completion');
      expect(chat.choices[0]?.message.content).toBe(expectedText(prompt, 5));

      const completion = await client.completions.create({ model: ENGINE_MODEL, prompt: 'one two', max_tokens: 3 });
      expect(completion.choices[0]?.text).toBe(expectedText('one two', 3));

      const models = await client.models.list();
      expect(models.data.map((m) => m.id)).toEqual([ENGINE_MODEL]);
    });

    it.runIf(dialect === 'postgres')(
      'a second replica on the same database answers through the one holding the agent’s channel, streams included',
      async () => {
        // The same secret key and database, its own port and data directory: what a second replica behind a load
        // balancer is. The agent stays connected to the first one.
        const port = await freePort();
        const { PORT: _port, ARK_DATA_DIR: _dir, ...shared } = site.cp.env;
        const second = await startControlPlane({
          port,
          databaseUrl: site.database?.url ?? null,
          env: { ...shared, ARK_REPLICA_URL: `http://127.0.0.1:${port}` },
        });
        try {
          const viaSecond = new OpenAI({
            apiKey: site.renterKey,
            baseURL: job.relayBase.replace(site.cp.base, second.base),
            maxRetries: 0,
            timeout: 30_000,
          });
          const prompt = 'answered through another replica';
          const chat = await viaSecond.chat.completions.create({
            model: ENGINE_MODEL,
            messages: [{ role: 'user', content: prompt }],
            max_tokens: 4,
          });
          expect(chat.choices[0]?.message.content).toBe(expectedText(prompt, 4));
          const stream = await viaSecond.chat.completions.create({
            model: ENGINE_MODEL,
            messages: [{ role: 'user', content: prompt }],
            max_tokens: 6,
            stream: true,
          });
          const arrivals: number[] = [];
          let text = '';
          for await (const chunk of stream) {
            const content = chunk.choices[0]?.delta?.content;
            if (content) {
              arrivals.push(performance.now());
              text += content;
            }
          }
          expect(text).toBe(expectedText(prompt, 6));
          // Relayed chunk by chunk across both replicas, not gathered into one burst.
          expect((arrivals.at(-1) as number) - (arrivals[0] as number)).toBeGreaterThan(TOKEN_DELAY_MS * 5 * 0.6);
          expect((await viaSecond.models.list()).data.map((m) => m.id)).toEqual([ENGINE_MODEL]);
          // The second replica cannot reach the engine itself: a request it may not forward (already forwarded once)
          // is refused there, so the answers above came through the first replica.
          const direct = await fetch(`${job.relayBase.replace(site.cp.base, second.base)}/models`, {
            headers: { authorization: `Bearer ${site.renterKey}`, 'x-ark-relay-hop': '1' },
          });
          expect(direct.status).toBe(503);
          expect(((await direct.json()) as { error: { code: string } }).error.code).toBe('RELAY_ENGINE_UNREACHABLE');
          // The holder still authorizes: another renter's key is refused there too.
          const stranger = await fetch(`${job.relayBase.replace(site.cp.base, second.base)}/models`, {
            headers: { authorization: 'Bearer ark_not_a_real_key' },
          });
          expect(stranger.status).toBe(401);
        } finally {
          await second.process.stop('SIGTERM');
        }
      },
      120_000,
    );

    it('streams chunk by chunk: the first tokens arrive while the engine is still writing the rest', async () => {
      const prompt = 'stream these words please';
      const tokens = 12;
      const started = performance.now();
      const stream = await client.chat.completions.create({
        model: ENGINE_MODEL,
        messages: [{ role: 'user', content: prompt }],
        max_tokens: tokens,
        stream: true,
      });
      const arrivals: Array<{ at: number; content: string }> = [];
      for await (const chunk of stream) {
        const content = chunk.choices[0]?.delta?.content;
        if (content) arrivals.push({ at: performance.now() - started, content });
      }
      expect(arrivals.map((a) => a.content).join('')).toBe(expectedText(prompt, tokens));
      expect(arrivals).toHaveLength(tokens);
      // The engine writes one token every TOKEN_DELAY_MS: unbuffered, the first arrives about (tokens - 1) delays
      // before the last, and the arrivals are spread over the stream, not delivered in one burst at the end.
      const first = arrivals[0]?.at as number;
      const last = arrivals[arrivals.length - 1]?.at as number;
      expect(last - first).toBeGreaterThan(TOKEN_DELAY_MS * (tokens - 1) * 0.6);
      const gaps = arrivals.slice(1).map((a, i) => a.at - (arrivals[i]?.at as number));
      expect(gaps.filter((gap) => gap >= TOKEN_DELAY_MS * 0.4).length).toBeGreaterThanOrEqual(tokens / 2);
    });

    it('the raw answer is text/event-stream, uncompressed, marked not to be buffered, ending with [DONE]', async () => {
      const response = await fetch(`${job.relayBase}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${site.renterKey}`, 'content-type': 'application/json', 'accept-encoding': 'gzip, br' },
        body: JSON.stringify({ model: ENGINE_MODEL, messages: [{ role: 'user', content: 'raw' }], max_tokens: 2, stream: true }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(response.headers.get('x-accel-buffering')).toBe('no');
      expect(response.headers.get('content-encoding') ?? 'identity').toBe('identity');
      const text = await response.text();
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    });

    it('an engine error mid-stream is passed on as the engine sent it', async () => {
      const stream = await client.chat.completions.create({
        model: ENGINE_MODEL,
        messages: [{ role: 'user', content: 'FAIL_MIDSTREAM now' }],
        max_tokens: 8,
        stream: true,
      });
      const seen: string[] = [];
      const failure = await (async () => {
        for await (const chunk of stream) seen.push(chunk.choices[0]?.delta?.content ?? '');
      })().then(
        () => null,
        (error: Error) => error,
      );
      expect(failure?.message).toMatch(/the engine failed mid-stream/);
      expect(seen.join('')).toBe(expectedText('FAIL_MIDSTREAM now', 2));
    });

    it('limits: one open request per job (429 UNAVAILABLE), a client that leaves frees its slot, the body size', async () => {
      const controller = new AbortController();
      const long = await client.chat.completions.create(
        { model: ENGINE_MODEL, messages: [{ role: 'user', content: 'long answer' }], max_tokens: 200, stream: true },
        { signal: controller.signal },
      );
      const iterator = long[Symbol.asyncIterator]();
      await iterator.next();
      const second = await site.renter(
        'POST',
        `/api/v1/jobs/${job.jobId}/openai/v1/chat/completions`,
        { model: ENGINE_MODEL, messages: [] },
        false,
      );
      expect(second.status).toBe(429);
      expect(second.body.error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
      // The client leaves: the relay cancels the engine request and frees the slot at once (200 tokens would take 12 s).
      controller.abort();
      await iterator.return?.();
      let models = await site.renter('GET', `/api/v1/jobs/${job.jobId}/openai/v1/models`);
      for (let i = 0; models.status === 429 && i < 20; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        models = await site.renter('GET', `/api/v1/jobs/${job.jobId}/openai/v1/models`);
      }
      expect(models.status).toBe(200);

      const big = await site.renter(
        'POST',
        `/api/v1/jobs/${job.jobId}/openai/v1/chat/completions`,
        { model: ENGINE_MODEL, messages: [{ role: 'user', content: 'x'.repeat(5000) }] },
        false,
      );
      expect(big.status).toBe(413);
    });

    it('only the renter owner: another renter gets 404, no credential 401', async () => {
      const stranger = `stranger-${dialect}-${Date.now()}@example.test`;
      await site.cli(['accounts', 'create', '--email', stranger, '--role', 'renter', '--verified']);
      const key = (await site.cli(['keys', 'create', '--email', stranger, '--scopes', 'renter', '--label', 'e2e'])).secret as string;
      const other = await api(site.cp.base, 'GET', `/api/v1/jobs/${job.jobId}/openai/v1/models`, { token: key });
      expect(other.status).toBe(404);
      const anonymous = await api(site.cp.base, 'GET', `/api/v1/jobs/${job.jobId}/openai/v1/models`);
      expect(anonymous.status).toBe(401);
    });

    it('after stop the relay refuses with 409 RELAY_JOB_NOT_RUNNING, and access no longer carries the key', {
      timeout: 90_000,
    }, async () => {
      await site.stopAndClose(job.jobId);
      const refused = await site.renter('GET', `/api/v1/jobs/${job.jobId}/openai/v1/models`);
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('RELAY_JOB_NOT_RUNNING');
      await expect(client.models.list()).rejects.toMatchObject({ status: 409 });
      const access = await site.renter('GET', `/api/v1/jobs/${job.jobId}/access`);
      expect(access.status).toBe(403);
      expect(JSON.stringify(access.body)).not.toContain(job.access.api_key);
    });
  });
});
