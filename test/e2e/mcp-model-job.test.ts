// MCP reaches what it rented (issue 25, item 3), on real parts and each store: a model-kind job on the test engine
// (test/engine, as relay.test.ts runs it) RUNNING on a paired `ark-agent run`; the official MCP SDK client, over
// stdio (a spawned `ark-mcp`) and over streamable HTTP (the control plane's /mcp), reads the job's access as the API
// answers it, pages its events with the cursor, and gets a chat completion through the relay from the engine.
import { fileURLToPath } from 'node:url';
import { ARK_TOOL_NAMES } from '@ark/mcp';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDockerAvailable } from '../harness/dockerd.js';
import { ENGINE_MODEL, expectedText, type ModelJob, startModelJob, withEngineWorld } from './relay-helpers.js';
import { DIALECTS, RentalSite } from './rental-helpers.js';

type Json = Record<string, any>;

const ARK_MCP_BIN = fileURLToPath(new URL('../../mcp/bin/ark-mcp.mjs', import.meta.url));

/** The tool's text content parsed as JSON; its structured content must say the same. */
async function tool(client: Client, name: string, args: Json): Promise<Json> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  expect(result.isError ?? false, `${name}: ${text}`).toBe(false);
  const parsed = JSON.parse(text) as Json;
  expect(result.structuredContent).toEqual(parsed);
  return parsed;
}

async function refusal(client: Client, name: string, args: Json): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, name).toBe(true);
  return JSON.stringify(result.content);
}

describe.skipIf(!isDockerAvailable())('MCP tools on a rented model job, on real parts', () => {
  const rig = withEngineWorld();

  describe.each(DIALECTS)('on %s', (dialect) => {
    let site: RentalSite;
    let job: ModelJob;
    const clients: Array<[string, Client]> = [];

    beforeAll(async () => {
      site = await RentalSite.start(dialect, rig.world);
      job = await startModelJob(site, rig.engine, { tokenDelayMs: 1 });
      const stdio = new Client({ name: 'ark-e2e-stdio', version: '1.0.0' });
      await stdio.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [ARK_MCP_BIN],
          env: { PATH: process.env.PATH ?? '', ARK_URL: site.cp.base, ARK_API_KEY: site.renterKey },
          stderr: 'pipe',
        }),
      );
      const http = new Client({ name: 'ark-e2e-http', version: '1.0.0' });
      await http.connect(
        new StreamableHTTPClientTransport(new URL('/mcp', site.cp.base), {
          requestInit: { headers: { authorization: `Bearer ${site.renterKey}` } },
        }),
      );
      clients.push(['stdio', stdio], ['http', http]);
    }, 240_000);

    afterAll(async () => {
      for (const [, client] of clients) await client.close().catch(() => undefined);
      await site?.stop();
    }, 60_000);

    it('lists the new tools over both transports', async () => {
      for (const [, client] of clients) {
        const names = (await client.listTools()).tools.map((t) => t.name);
        expect(names.sort()).toEqual([...ARK_TOOL_NAMES].sort());
        expect(names).toEqual(expect.arrayContaining(['job_access', 'job_events', 'chat_completion']));
      }
    });

    it('job_access answers what the API answers: endpoints, host-key fingerprint, the ssh command, the engine key', async () => {
      for (const [transport, client] of clients) {
        const access = await tool(client, 'job_access', { job_id: job.jobId });
        expect(access, transport).toEqual(job.access);
        expect(access.mode).toBe('execution');
        const ssh = (access.endpoints as Json[]).find((e) => e.kind === 'ssh');
        const http = (access.endpoints as Json[]).find((e) => e.kind === 'http');
        expect(ssh).toMatchObject({ external_host: '127.0.0.1', external_port: expect.any(Number) });
        expect(http?.external_port).toBe(job.enginePort);
        expect(access.ssh_host_key_fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
        expect(access.ssh_command).toMatch(/^ssh /);
        expect(access.ssh_command).toContain(String(ssh?.external_port));
        expect(access.api_key).toMatch(/^[A-Za-z0-9_-]{43}$/);
      }
    });

    it('job_events pages the job’s events with the cursor, two at a time, to the same list as one read', async () => {
      const all = await site.events(job.jobId);
      expect(all.map((e) => e.kind)).toEqual(expect.arrayContaining(['readiness_reported', 'state_changed']));
      expect(all.length).toBeGreaterThan(2);
      for (const [transport, client] of clients) {
        const seen: Json[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < 100; page += 1) {
          const answer = await tool(client, 'job_events', { job_id: job.jobId, limit: 2, ...(cursor ? { cursor } : {}) });
          expect((answer.items as Json[]).length).toBeLessThanOrEqual(2);
          seen.push(...(answer.items as Json[]));
          if (answer.next_cursor === null || (answer.items as Json[]).length === 0) break;
          cursor = answer.next_cursor as string;
        }
        expect(
          seen.map((e) => e.seq),
          transport,
        ).toEqual(all.map((e) => e.seq));
        expect(seen.map((e) => e.kind)).toEqual(all.map((e) => e.kind));
      }
    });

    it('chat_completion gets the engine’s answer through the relay, with the model named or the engine’s own', async () => {
      for (const [transport, client] of clients) {
        const prompt = `through mcp over ${transport}`;
        const named = await tool(client, 'chat_completion', {
          job_id: job.jobId,
          model: ENGINE_MODEL,
          messages: [{ role: 'user', content: prompt }],
          max_tokens: 4,
        });
        expect(named.object).toBe('chat.completion');
        expect(named.model).toBe(ENGINE_MODEL);
        expect(named.choices[0].message).toMatchObject({ role: 'assistant', content: expectedText(prompt, 4) });
        const defaulted = await tool(client, 'chat_completion', {
          job_id: job.jobId,
          messages: [{ role: 'user', content: 'the engine chooses' }],
          max_tokens: 3,
        });
        expect(defaulted.model).toBe(ENGINE_MODEL);
        expect(defaulted.choices[0].message.content).toBe(expectedText('the engine chooses', 3));
      }
    });

    it('after stop, chat_completion is refused with the relay’s reason and job_access with the API’s', { timeout: 90_000 }, async () => {
      await site.stopAndClose(job.jobId);
      for (const [, client] of clients) {
        expect(await refusal(client, 'chat_completion', { job_id: job.jobId, messages: [{ role: 'user', content: 'x' }] })).toContain(
          'RELAY_JOB_NOT_RUNNING',
        );
        expect(await refusal(client, 'job_access', { job_id: job.jobId })).toContain('HTTP 403');
      }
    });
  });
});
