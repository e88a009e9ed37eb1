// The MCP server for AI agents (issue 13, item 5), driven by the official SDK's own Client: over streamable HTTP at
// POST /mcp of a really listening control plane, on both stores, and over stdio by spawning `ark-mcp` (and `ark mcp`) against it. A
// tool call flow reserves a job end to end: search offers, quote, reserve (the balance holds the budget), the job
// runs (the agent's messages delivered as the gateway delivers them), its status and events, stop. Calls without a
// credential, or with a key lacking the renter scope, are refused.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARK_TOOL_NAMES } from '@ark/mcp';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { paymentsConfigFrom } from '../../config/payments.js';
import { ARK_CLI_BIN, runArk } from '../../testing/cli.js';
import { createTestApp, type SeededAccount, seedAccount, seedAgent, type TestApp, testConfig } from '../../testing/app.js';
import { writeChainsFile } from '../../testing/deposits.js';
import { customImage, fund, type LiveMachine, liveMachine, runJob, sshPublicKey } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;

const ARK_MCP_BIN = fileURLToPath(new URL('../../../../mcp/bin/ark-mcp.mjs', import.meta.url));

/** A tool's JSON answer; fails the test when the tool reported an error. */
async function tool(client: Client, name: string, args: Json = {}): Promise<Json> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  expect(result.isError ?? false, `${name}: ${text}`).toBe(false);
  return JSON.parse(text) as Json;
}

interface Rig {
  t: TestApp<ManualClock>;
  baseUrl: string;
  renter: SeededAccount;
  machine: LiveMachine;
}

async function startRig(dialect: 'sqlite' | 'postgres'): Promise<Rig> {
  const t = await createTestApp(dialect);
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const address = t.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const renter = await seedAccount(t.ctx, { scopes: ['renter'] });
  await fund(t.ctx, renter.accountId, 50_000_000n);
  const machine = await liveMachine(t.ctx, t.app);
  return { t, baseUrl: `http://127.0.0.1:${address.port}`, renter, machine };
}

/** Search, quote, reserve, run, status, events, stop: the whole rental through the tools. */
async function rentThroughTools(client: Client, rig: Rig): Promise<void> {
  // Scored once, the machine's reliability comes with its offer: the tool asks for it (include=reliability).
  await rig.t.ctx.services.reliability.refresh();
  const offers = await tool(client, 'search_offers', { limit: 10 });
  const offer = (offers.items as Json[]).find((o) => o.offer_id === rig.machine.offerId);
  expect(offer, JSON.stringify(offers)).toBeDefined();
  expect(offer?.reliability, JSON.stringify(offer)).toMatchObject({ score: expect.stringMatching(/^(0\.\d{4}|1\.0000)$/) });

  const quote = await tool(client, 'quote', {
    offer_id: rig.machine.offerId,
    gpu_count: 1,
    duration_limit_s: 3600,
    image_digest: customImage(),
  });
  expect(quote.machine_id).toBe(rig.machine.machineId);
  expect(BigInt(quote.budget_micro)).toBeGreaterThan(0n);

  const reserved = await tool(client, 'reserve_job', { quote_id: quote.quote_id, ssh_public_keys: [sshPublicKey()] });
  expect(reserved.state).toBe('RESERVED');
  const jobId = reserved.job_id as string;

  // The budget is held from the balance: the reservation really happened.
  const balance = await tool(client, 'balance');
  expect(balance.held_micro).toBe(quote.budget_micro);
  expect(BigInt(balance.available_micro)).toBe(50_000_000n - BigInt(quote.budget_micro));

  // The machine's agent accepts the launch and reports readiness.
  await runJob(rig.t, rig.machine.machineId, jobId);
  const running = await tool(client, 'job_status', { job_id: jobId });
  expect(running.job_id).toBe(jobId);
  expect(running.state).toBe('RUNNING');
  const listed = await tool(client, 'list_jobs', { state: 'RUNNING' });
  expect((listed.items as Json[]).map((j) => j.job_id)).toContain(jobId);

  const events = await tool(client, 'job_events', { job_id: jobId });
  expect((events.items as Json[]).length).toBeGreaterThan(1);
  // Paged with the cursor: the first event, then from its next_cursor the rest, as the whole list has them.
  const first = await tool(client, 'job_events', { job_id: jobId, limit: 1 });
  expect(first.items).toEqual([events.items[0]]);
  expect(first.next_cursor).toEqual(expect.any(String));
  const rest = await tool(client, 'job_events', { job_id: jobId, cursor: first.next_cursor });
  expect(rest.items).toEqual((events.items as Json[]).slice(1));

  // Access as the API answers it: the ssh endpoint, the pinned host key and the command that uses both.
  const access = await tool(client, 'job_access', { job_id: jobId });
  const direct = await fetch(`${rig.baseUrl}/api/v1/jobs/${jobId}/access`, { headers: { authorization: `Bearer ${rig.renter.apiKey}` } });
  expect(access).toEqual(await direct.json());
  expect(access.mode).toBe('execution');
  const ssh = (access.endpoints as Json[]).find((e) => e.kind === 'ssh');
  expect(ssh).toBeDefined();
  expect(access.ssh_host_key_fingerprint).toMatch(/^SHA256:/);
  expect(access.ssh_command).toContain(String(ssh?.external_port));
  expect(access.api_key).toBeUndefined();

  // A chat completion needs a job on a model template (test/e2e/mcp-model-job.test.ts chats with a real engine).
  const chat = (await client.callTool({
    name: 'chat_completion',
    arguments: { job_id: jobId, model: 'any', messages: [{ role: 'user', content: 'hello' }] },
  })) as CallToolResult;
  expect(chat.isError).toBe(true);
  expect(JSON.stringify(chat.content)).toContain('RELAY_NOT_MODEL_JOB');

  // The job's logs are kept on its machine, whose agent is simulated here (no channel): the tool passes the API's
  // answer back, which says the machine cannot be reached for them (test/e2e/job-logs.test.ts reads real lines).
  const logs = (await client.callTool({ name: 'job_logs', arguments: { job_id: jobId, tail: 10 } })) as CallToolResult;
  expect(logs.isError).toBe(true);
  expect(JSON.stringify(logs.content)).toContain('JOB_LOGS_UNREACHABLE');
  const strangers = (await client.callTool({ name: 'job_logs', arguments: { job_id: randomUUID() } })) as CallToolResult;
  expect(JSON.stringify(strangers.content)).toContain('HTTP 404');

  const stopped = await tool(client, 'stop_job', { job_id: jobId, reason: 'done through MCP' });
  expect(stopped.job_id).toBe(jobId);
  expect(['STOPPING', 'STOPPED', 'CLEANING', 'CLOSED']).toContain(stopped.state);
  expect((await tool(client, 'job_status', { job_id: jobId })).state).toBe(stopped.state);
}

describe.each(DIALECTS)('MCP over streamable HTTP on %s', (dialect) => {
  let rig: Rig;
  let client: Client;

  beforeAll(async () => {
    rig = await startRig(dialect);
    client = new Client({ name: 'ark-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', rig.baseUrl), {
        requestInit: { headers: { authorization: `Bearer ${rig.renter.apiKey}` } },
      }),
    );
  });
  afterAll(async () => {
    await client?.close();
    await rig?.t.destroy();
  });

  it('lists the renter tools, each with a description and an input schema', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...ARK_TOOL_NAMES].sort());
    for (const t of tools) {
      expect(t.description?.length ?? 0, t.name).toBeGreaterThan(40);
      expect(t.inputSchema.type, t.name).toBe('object');
    }
    const quote = tools.find((t) => t.name === 'quote');
    expect(quote?.inputSchema.required).toEqual(expect.arrayContaining(['offer_id', 'gpu_count', 'duration_limit_s']));
  });

  it('reserves a job end to end: search, quote, reserve, status, events, stop', async () => {
    await rentThroughTools(client, rig);
  });

  it('passes the API’s refusals back as tool errors', async () => {
    const missing = (await client.callTool({ name: 'job_status', arguments: { job_id: randomUUID() } })) as CallToolResult;
    expect(missing.isError).toBe(true);
    expect(JSON.stringify(missing.content)).toContain('NOT_FOUND');
    // The tool's own schema refuses a malformed id before any API call.
    const malformed = (await client.callTool({ name: 'job_status', arguments: { job_id: '../account' } })) as CallToolResult;
    expect(malformed.isError).toBe(true);
  });

  it('refuses a call without a credential, and a key without the renter scope', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(new URL('/mcp', rig.baseUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(initialize),
      });
    const anonymous = await post({});
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as Json).error.code).toBe('UNAUTHENTICATED');

    const host = await seedAccount(rig.t.ctx, { role: 'host', scopes: ['host'] });
    const hostKey = await post({ authorization: `Bearer ${host.apiKey}` });
    expect(hostKey.status).toBe(403);
    expect(((await hostKey.json()) as Json).error.code).toBe('SCOPE_REQUIRED');

    const ok = await post({ authorization: `Bearer ${rig.renter.apiKey}` });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as Json).result.serverInfo.name).toBe('ark');

    // The SDK client cannot even initialize without the key.
    const stranger = new Client({ name: 'stranger', version: '1.0.0' });
    await expect(stranger.connect(new StreamableHTTPClientTransport(new URL('/mcp', rig.baseUrl)))).rejects.toThrow(/UNAUTHENTICATED/);

    // The plumbing's answers hold here as on every route: the envelope for malformed JSON or a body that is no JSON-RPC message.
    const raw = (body: string) =>
      fetch(new URL('/mcp', rig.baseUrl), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${rig.renter.apiKey}`,
        },
        body,
      });
    for (const [answer, status, code] of [
      [await raw('{"jsonrpc":'), 422, 'MALFORMED_JSON'],
      [await raw('{"method":"tools/list"}'), 422, 'VALIDATION_FAILED'],
    ] as const) {
      expect(answer.status).toBe(status);
      expect(((await answer.json()) as Json).error.code).toBe(code);
    }

    // A stateless endpoint offers no event stream: GET answers 405 with Allow.
    const get = await fetch(new URL('/mcp', rig.baseUrl), { headers: { accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });
});

describe.each(DIALECTS)('MCP money out for an agent on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let client: Client;
  const wallet = privateKeyToAccount(generatePrivateKey());

  beforeAll(async () => {
    // Withdrawals on a chain nothing is sent to here (no payer runs): a request stays INTENT.
    const payments = paymentsConfigFrom({ ARK_CHAINS: writeChainsFile() }, (m) => new Error(m));
    t = await createTestApp(dialect, { configOverrides: { payments: { ...testConfig().payments, ...payments } } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const agent = await seedAgent(t.ctx, { walletAddress: wallet.address, stepUp: false });
    await fund(t.ctx, agent.accountId, 5_000_000n);
    client = new Client({ name: 'ark-agent-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', `http://127.0.0.1:${address.port}`), {
        requestInit: { headers: { authorization: `Bearer ${agent.apiKeys[0]}` } },
      }),
    );
  });
  afterAll(async () => {
    await client?.close();
    await t?.destroy();
  });

  const refusal = async (name: string, args: Json) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(result.isError, name).toBe(true);
    return JSON.stringify(result.content);
  };

  it('steps its key up with its wallet, registers an address and withdraws its available balance, never its payable', async () => {
    const address = `0x${'5a'.repeat(20)}`;
    expect(await refusal('add_withdrawal_address', { address })).toContain('STEP_UP_REQUIRED');
    const challenge = await tool(client, 'wallet_step_up_challenge');
    expect(challenge.wallet_address).toBe(wallet.address);
    const signature = await wallet.signMessage({ message: challenge.message });
    expect(await tool(client, 'wallet_step_up', { message: challenge.message, signature })).toMatchObject({ method: 'wallet' });

    const added = await tool(client, 'add_withdrawal_address', { address, label: 'agent treasury' });
    expect((await tool(client, 'withdrawal_addresses')).items.map((a: Json) => a.id)).toEqual([added.id]);
    // The registration key is renter only: payable earnings are host business.
    const payout = { balance: 'payable', amount_micro: '1000000', withdrawal_address_id: added.id };
    expect(await refusal('withdraw', payout)).toContain('SCOPE_REQUIRED');
    const made = await tool(client, 'withdraw', { balance: 'available', amount_micro: '2000000', withdrawal_address_id: added.id });
    expect(made).toMatchObject({ kind: 'withdrawal', state: 'INTENT', amount_micro: '2000000', address });
    expect((await tool(client, 'balance')).available_micro).toBe('3000000');
  });
});

describe('MCP over stdio (ark-mcp)', () => {
  let rig: Rig;

  beforeAll(async () => {
    rig = await startRig('sqlite');
  });
  afterAll(async () => {
    await rig?.t.destroy();
  });

  const spawnClient = async (env: Record<string, string>, args: string[] = [ARK_MCP_BIN]) => {
    const client = new Client({ name: 'ark-test-stdio', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args,
      env: { PATH: process.env.PATH ?? '', ...env },
      stderr: 'pipe',
    });
    await client.connect(transport);
    return client;
  };

  it('reserves a job end to end through the spawned server', async () => {
    const client = await spawnClient({ ARK_URL: rig.baseUrl, ARK_API_KEY: rig.renter.apiKey });
    try {
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([...ARK_TOOL_NAMES].sort());
      await rentThroughTools(client, rig);
    } finally {
      await client.close();
    }
  });

  it('`ark offers search` shows each offer’s reliability, which it asks the API for (issue 22)', async () => {
    await rig.t.ctx.services.reliability.refresh();
    const stdout = await runArk(['offers', 'search', '--sort', 'reliability', '--json'], {
      baseUrl: rig.baseUrl,
      apiKey: rig.renter.apiKey,
    });
    const offer = (JSON.parse(stdout).items as Json[]).find((o) => o.offer_id === rig.machine.offerId);
    expect(offer?.reliability, stdout).toMatchObject({ score: expect.stringMatching(/^(0\.\d{4}|1\.0000)$/) });
  });

  it('reports the API’s 401 for a wrong key, and will not start without one', async () => {
    const client = await spawnClient({ ARK_URL: rig.baseUrl, ARK_API_KEY: 'ark_not-a-real-key' });
    try {
      const refused = (await client.callTool({ name: 'balance', arguments: {} })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toMatch(/HTTP 401.*UNAUTHENTICATED/);
    } finally {
      await client.close();
    }
    await expect(spawnClient({ ARK_URL: rig.baseUrl })).rejects.toThrow();
  });
});

describe('MCP over stdio (ark mcp, the CLI)', () => {
  let rig: Rig;

  beforeAll(async () => {
    rig = await startRig('sqlite');
  });
  afterAll(async () => {
    await rig?.t.destroy();
  });

  it('`ark mcp` serves the same tools with the credentials `ark login` stored (0600 config file)', async () => {
    const configDir = mkdtempSync(join(tmpdir(), 'ark-mcp-cli-'));
    try {
      writeFileSync(join(configDir, 'config.json'), JSON.stringify({ url: rig.baseUrl, api_key: rig.renter.apiKey }), { mode: 0o600 });
      const client = new Client({ name: 'ark-test-cli', version: '1.0.0' });
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [ARK_CLI_BIN, 'mcp'],
          env: { PATH: process.env.PATH ?? '', ARK_CONFIG_DIR: configDir },
          stderr: 'pipe',
        }),
      );
      try {
        expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([...ARK_TOOL_NAMES].sort());
        await rentThroughTools(client, rig);
      } finally {
        await client.close();
      }
    } finally {
      rmSync(configDir, { recursive: true, force: true });
    }
  });
});
