import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ArkAnswer, ArkApi, ArkRequest } from './api.js';

// The renter's operations as MCP tools, and money out of either balance. Each tool is one call (two for top-up instructions) of the public HTTP API
// with the caller's credential: the API decides everything (scopes, ownership, balance, admission), a tool only
// shapes the input and passes the answer back. Input schemas mirror the API's request schemas (shared/src/http).

const uuid = z.string().uuid();
/** Money and other integers travel as base-10 strings, never floats (contract part 1). */
const decimal = z.string().regex(/^(0|[1-9][0-9]{0,18})$/, 'a base-10 integer string');
const limit = z.number().int().min(1).max(100).optional().describe('Page size, 1..100 (default 20).');
const cursor = z.string().min(1).max(512).optional().describe('next_cursor of the previous page.');
const idempotencyKey = uuid
  .optional()
  .describe('UUID sent as Idempotency-Key. Reuse it to retry safely (the first result is replayed); omitted, a fresh one is used.');

/** Every tool's answer: the API's JSON, and isError when the API refused (its error envelope says why). */
function answer(result: ArkAnswer, ok: (status: number) => boolean = (status) => status < 300): CallToolResult {
  const text = typeof result.body === 'string' ? result.body : JSON.stringify(result.body ?? { status: result.status }, null, 2);
  if (ok(result.status)) {
    const structured = result.body !== null && typeof result.body === 'object' && !Array.isArray(result.body);
    return { content: [{ type: 'text', text }], ...(structured ? { structuredContent: result.body as Record<string, unknown> } : {}) };
  }
  return { isError: true, content: [{ type: 'text', text: `Ark answered HTTP ${result.status}: ${text}` }] };
}

const call = async (api: ArkApi, request: ArkRequest) => answer(await api(request));
const jobPath = (jobId: string, tail = '') => `/api/v1/jobs/${encodeURIComponent(jobId)}${tail}`;

/** The id of the first model in an OpenAI model list ({data: [{id}]}). */
function firstModelId(body: unknown): string | undefined {
  const data = (body as { data?: unknown } | null)?.data;
  const id = Array.isArray(data) ? (data[0] as { id?: unknown } | undefined)?.id : undefined;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** The tool names, in the order they are registered (README and tests list them). */
export const ARK_TOOL_NAMES = [
  'search_offers',
  'list_templates',
  'quote',
  'reserve_job',
  'list_jobs',
  'job_status',
  'job_access',
  'job_events',
  'job_logs',
  'chat_completion',
  'stop_job',
  'extend_job',
  'balance',
  'deposit_address',
  'top_up_instructions',
  'withdrawal_addresses',
  'add_withdrawal_address',
  'wallet_step_up_challenge',
  'wallet_step_up',
  'withdraw',
] as const;

export function registerArkTools(server: McpServer, api: ArkApi): void {
  const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

  server.registerTool(
    'search_offers',
    {
      title: 'Search GPU offers',
      description:
        'List machines for rent, cheapest first (GET /api/v1/offers). Rates are micro-USDC per hour as decimal strings (1 USDC = 1000000). ' +
        'Filter by exact GPU model, minimum VRAM per GPU, region, maximum total hourly rate (platform fee included), an instant the offer ' +
        'must cover, minimum reliability, and template_id (adds a `fit` telling whether the template fits the GPUs). Each offer also carries its ' +
        'machine’s `reliability` ({score: "0.9876", new}) once scored, and its `verification` ({score, verified_at}): the hardware score of ' +
        'its latest signed self-test receipt (null before one; min_score filters on it; anyone can check the receipts at ' +
        'GET /api/v1/machines/{machine_id}/verification). `readiness` is ready, provisioning or unavailable (offline, or rented out ' +
        'right now: quote another). An offer without gpu_count and model is a CPU machine, rented whole (gpu_count 1). Pass an ' +
        'offer_id to quote.',
      inputSchema: {
        gpu_model: z.string().min(1).max(200).optional().describe('Exact GPU model, e.g. "NVIDIA GeForce RTX 4090".'),
        min_vram_bytes: decimal.optional().describe('Every GPU has at least this much VRAM (bytes, decimal string).'),
        region: z.string().min(1).max(64).optional(),
        max_rate_micro_per_hour: decimal.optional().describe('Highest total rate in micro-USDC per hour.'),
        available_at: z.string().datetime().optional().describe('RFC 3339 UTC instant the availability must cover.'),
        template_id: uuid.optional().describe('A template (see list_templates): each offer then says how it fits.'),
        min_reliability: z
          .string()
          .regex(/^(0(\.[0-9]{1,4})?|1(\.0{1,4})?)$/)
          .optional()
          .describe('0 to 1, e.g. "0.99": only machines scored at least this.'),
        min_score: z
          .string()
          .regex(/^[0-9]{1,9}(\.[0-9]{1,3})?$/)
          .optional()
          .describe('A decimal, e.g. "250": only machines whose verified hardware score is at least this.'),
        limit,
        cursor,
      },
      annotations: readOnly,
    },
    // Reliability and verification are asked for explicitly: the contract's OfferSummary carries neither by default.
    (input) => call(api, { method: 'GET', path: '/api/v1/offers', query: { ...input, include: 'reliability,verification' } }),
  );

  server.registerTool(
    'list_templates',
    {
      title: 'List job templates',
      description:
        'The public catalog of job templates (GET /api/v1/templates): models served through an OpenAI-compatible relay, classical images, ' +
        'custom ones. Each has a template_id to quote with and its VRAM needs.',
      inputSchema: {
        kind: z.enum(['model', 'classical', 'custom']).optional(),
        min_vram_bytes: decimal.optional().describe('Templates needing at most this much VRAM (bytes).'),
        backend: z.enum(['cuda', 'rocm', 'sycl', 'vulkan', 'metal']).optional(),
        limit,
        cursor,
      },
      annotations: readOnly,
    },
    (input) => call(api, { method: 'GET', path: '/api/v1/templates', query: input }),
  );

  server.registerTool(
    'quote',
    {
      title: 'Quote an offer',
      description:
        'A binding price for renting an offer (POST /api/v1/quotes), valid 60 seconds: reserve it with reserve_job before expires_at. ' +
        'Give exactly one of template_id and image_digest (repository@sha256:...). budget_micro is the most the job may spend ' +
        '(default: the estimated total for duration_limit_s). Nothing is charged by a quote.',
      inputSchema: {
        offer_id: uuid,
        gpu_count: z.number().int().min(1).max(64),
        duration_limit_s: z.number().int().min(1).describe('How long the job may run, in seconds.'),
        budget_micro: decimal.optional().describe('Budget in micro-USDC; defaults to the estimated total.'),
        template_id: uuid.optional(),
        image_digest: z
          .string()
          .regex(/^[^@\s]+@sha256:[0-9a-f]{64}$/)
          .optional()
          .describe('A container image pinned by digest, e.g. registry/repo@sha256:<64 hex>.'),
        expected_version: decimal.optional().describe('The offer_version you read; refused if the offer changed since.'),
        idempotency_key: idempotencyKey,
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ idempotency_key, ...body }) => call(api, { method: 'POST', path: '/api/v1/quotes', body, idempotencyKey: idempotency_key ?? true }),
  );

  server.registerTool(
    'reserve_job',
    {
      title: 'Reserve a quoted machine',
      description:
        'Turn a quote into a job (POST /api/v1/jobs): holds the quote’s budget_micro from the available balance and queues the launch. ' +
        'The job starts RESERVED; poll job_status until RUNNING (metering starts only then). ssh_public_keys are OpenSSH public key lines ' +
        'allowed into the job. This spends money: the charge is at most the budget.',
      inputSchema: {
        quote_id: uuid,
        ssh_public_keys: z
          .array(z.string().min(1).max(16_384))
          .min(1)
          .max(16)
          .describe('OpenSSH lines, e.g. "ssh-ed25519 AAAA... me@laptop".'),
        env: z
          .record(
            z
              .string()
              .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
              .max(128),
            z.string().max(4096),
          )
          .optional()
          .describe('Environment variables for the container; names starting with ARK_ are reserved.'),
        idempotency_key: idempotencyKey,
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ idempotency_key, ...body }) => call(api, { method: 'POST', path: '/api/v1/jobs', body, idempotencyKey: idempotency_key ?? true }),
  );

  server.registerTool(
    'list_jobs',
    {
      title: 'List your jobs',
      description: 'Your jobs, newest first (GET /api/v1/jobs), optionally only those in one state (e.g. RUNNING).',
      inputSchema: {
        state: z.string().min(1).max(32).optional().describe('A job state such as RESERVED, RUNNING, CLOSED.'),
        limit,
        cursor,
      },
      annotations: readOnly,
    },
    (input) => call(api, { method: 'GET', path: '/api/v1/jobs', query: input }),
  );

  server.registerTool(
    'job_status',
    {
      title: 'Job status',
      description:
        'One job (GET /api/v1/jobs/{id}): its state (RESERVED, STARTING, RUNNING, STOPPING, ... CLOSED), budget and charge so far, ' +
        'job_version and budget_version (needed by extend_job).',
      inputSchema: { job_id: uuid },
      annotations: readOnly,
    },
    ({ job_id }) => call(api, { method: 'GET', path: jobPath(job_id) }),
  );

  server.registerTool(
    'job_access',
    {
      title: 'Job access',
      description:
        'How to reach a job (GET /api/v1/jobs/{id}/access), as the API answers it: `mode` (execution while it runs, retrieval-read-only ' +
        'after a stop), its `endpoints` ({endpoint_id, kind: ssh, https, http or sftp-retrieval, external_host, external_port}), the ' +
        'machine’s `ssh_host_key_fingerprint` to pin, the ready-to-run `ssh_command`, `expires_at`, and for a model job running, the ' +
        'engine’s `api_key`. Refused (403) before the job is verified ready and after its retrieval window.',
      inputSchema: { job_id: uuid },
      annotations: readOnly,
    },
    ({ job_id }) => call(api, { method: 'GET', path: jobPath(job_id, '/access') }),
  );

  server.registerTool(
    'job_events',
    {
      title: 'Job events',
      description:
        'The job’s sequenced events, oldest first (GET /api/v1/jobs/{id}/events): image pull, start, readiness, stop, charges. A page ' +
        'is {items, next_cursor}; pass next_cursor as `cursor` to read the events after that page (null: nothing more yet; poll later ' +
        'with the last non-null one to follow the job).',
      inputSchema: { job_id: uuid, limit, cursor },
      annotations: readOnly,
    },
    ({ job_id, ...query }) => call(api, { method: 'GET', path: jobPath(job_id, '/events'), query }),
  );

  server.registerTool(
    'job_logs',
    {
      title: 'Job logs',
      description:
        'What the job’s container wrote to stdout and stderr, oldest first (GET /api/v1/jobs/{id}/logs), the job’s secret values redacted: ' +
        'the last `tail` lines (default 100, at most 1000), or with `cursor` the lines after it. Each line has a cursor, a stream ' +
        '(stdout, stderr, or ark for the platform’s notes, such as lines dropped past the rate bound) and the time it was written; the ' +
        'answer’s `cursor` asks for what follows, so calling again with it reads new lines as they come. Available while the job runs ' +
        'and through its retrieval window after it stopped.',
      inputSchema: {
        job_id: uuid,
        tail: z.number().int().min(0).max(1000).optional().describe('How many lines (default 100).'),
        cursor: z
          .string()
          .regex(/^(0|[1-9][0-9]{0,15})$/)
          .optional()
          .describe('The `cursor` of an earlier answer (or a line’s): only the lines after it.'),
      },
      annotations: readOnly,
    },
    ({ job_id, ...query }) => call(api, { method: 'GET', path: jobPath(job_id, '/logs'), query }),
  );

  server.registerTool(
    'chat_completion',
    {
      title: 'Chat with a model job',
      description:
        'A chat completion from a RUNNING job on a model template, through Ark’s OpenAI-compatible relay (POST ' +
        '/api/v1/jobs/{id}/openai/v1/chat/completions) with your own credential: the answer is the engine’s OpenAI chat.completion ' +
        'object (choices[0].message.content is the reply). Without `model`, the engine’s first listed model is used. Not streamed. ' +
        'Jobs on model templates are community inference: do not send sensitive data. A job of another kind is refused ' +
        '(RELAY_NOT_MODEL_JOB), one not running too (RELAY_JOB_NOT_RUNNING).',
      inputSchema: {
        job_id: uuid,
        messages: z
          .array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string().max(200_000) }))
          .min(1)
          .max(256)
          .describe('The conversation, e.g. [{"role":"user","content":"Hello"}].'),
        model: z.string().min(1).max(256).optional().describe('The engine’s model id (see its model list); default the first one.'),
        max_tokens: z.number().int().min(1).max(1_000_000).optional(),
        temperature: z.number().min(0).max(2).optional(),
        top_p: z.number().min(0).max(1).optional(),
        stop: z.array(z.string().min(1).max(256)).max(4).optional(),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ job_id, model, ...rest }) => {
      let chosen = model;
      if (chosen === undefined) {
        const models = await api({ method: 'GET', path: jobPath(job_id, '/openai/v1/models') });
        if (models.status >= 300) return answer(models);
        chosen = firstModelId(models.body);
        if (chosen === undefined)
          return answer({ status: 502, body: { error: { code: 'NO_MODEL', message: 'The engine lists no model.' } } });
      }
      return call(api, {
        method: 'POST',
        path: jobPath(job_id, '/openai/v1/chat/completions'),
        body: { ...rest, model: chosen, stream: false },
      });
    },
  );

  server.registerTool(
    'stop_job',
    {
      title: 'Stop a job',
      description:
        'Stop a job (POST /api/v1/jobs/{id}/stop): answers STOPPING; the machine stops the container and sends its final meter receipt, ' +
        'and when it confirms, the job is STOPPED and the unspent budget is back in the available balance in that same step (a ' +
        'hold_released event in job_events says how much). The files stay readable over SFTP for the retrieval window, then the ' +
        'job is cleaned and CLOSED; that window holds no money. Repeating it is harmless.',
      inputSchema: { job_id: uuid, reason: z.string().min(1).max(500).describe('Why, for the record.'), idempotency_key: idempotencyKey },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ job_id, reason, idempotency_key }) =>
      call(api, { method: 'POST', path: jobPath(job_id, '/stop'), body: { reason }, idempotencyKey: idempotency_key ?? true }),
  );

  server.registerTool(
    'extend_job',
    {
      title: 'Extend a job’s budget and duration',
      description:
        'Add budget and raise the duration limit of a job (POST /api/v1/jobs/{id}/budget-extension) at its original rate. Read job_status ' +
        'first: expected_job_version and expected_budget_version must be the job’s current job_version and budget_version.',
      inputSchema: {
        job_id: uuid,
        additional_budget_micro: decimal.describe('Micro-USDC to add, held from the available balance.'),
        new_duration_limit_s: z.number().int().min(1).describe('The new total duration limit (not shorter than the current one).'),
        expected_job_version: decimal,
        expected_budget_version: decimal,
        idempotency_key: idempotencyKey,
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ job_id, idempotency_key, ...body }) =>
      call(api, { method: 'POST', path: jobPath(job_id, '/budget-extension'), body, idempotencyKey: idempotency_key ?? true }),
  );

  server.registerTool(
    'balance',
    {
      title: 'Prepaid balance',
      description:
        'Your prepaid balance (GET /api/v1/billing/balance): available_micro, held_micro (budgets of your jobs), recent deposits and x402 top-ups.',
      inputSchema: { limit },
      annotations: readOnly,
    },
    (query) => call(api, { method: 'GET', path: '/api/v1/billing/balance', query }),
  );

  server.registerTool(
    'deposit_address',
    {
      title: 'Deposit address',
      description:
        'Your deposit address (GET /api/v1/billing/deposit-address) with the networks and assets it takes: USDC or USDT are credited 1:1 ' +
        'after the network’s finality. Funds sent on a network not listed are not credited.',
      inputSchema: {},
      annotations: readOnly,
    },
    () => call(api, { method: 'GET', path: '/api/v1/billing/deposit-address' }),
  );

  server.registerTool(
    'top_up_instructions',
    {
      title: 'How to top up',
      description:
        'How to add funds: the x402 payment requirements for an amount (POST /api/v1/billing/x402/top-up without a payment answers them; ' +
        'a wallet signs an EIP-3009 USDC authorization and repeats the request with PAYMENT-SIGNATURE), and the deposit address. Nothing is paid.',
      inputSchema: { amount_micro: decimal.describe('Amount to top up in micro-USDC, e.g. "5000000" for 5 USDC.') },
      annotations: readOnly,
    },
    async ({ amount_micro }) => {
      const [x402, deposit] = await Promise.all([
        api({ method: 'POST', path: '/api/v1/billing/x402/top-up', query: { amount_micro } }),
        api({ method: 'GET', path: '/api/v1/billing/deposit-address' }),
      ]);
      const instructions = {
        x402:
          x402.status === 402
            ? {
                how: 'POST /api/v1/billing/x402/top-up?amount_micro=<amount> with the header PAYMENT-SIGNATURE: base64 of an x402 v2 payment payload for one of `accepts`; repeat the same request to read the result.',
                payment_required: x402.body,
              }
            : { available: false, status: x402.status, answer: x402.body },
        deposit:
          deposit.status === 200
            ? { how: 'Send USDC or USDT on a listed network to the address; credited after finality.', address: deposit.body }
            : { available: false, status: deposit.status, answer: deposit.body },
      };
      const none = x402.status !== 402 && deposit.status !== 200;
      return answer({ status: none ? Math.max(x402.status, deposit.status) : 200, body: instructions });
    },
  );
  server.registerTool(
    'withdrawal_addresses',
    {
      title: 'Withdrawal addresses',
      description:
        'Your registered withdrawal addresses (GET /api/v1/withdrawal-addresses), newest first: the withdrawal_address_id a withdraw names.',
      inputSchema: { limit, cursor },
      annotations: readOnly,
    },
    (query) => call(api, { method: 'GET', path: '/api/v1/withdrawal-addresses', query }),
  );

  server.registerTool(
    'add_withdrawal_address',
    {
      title: 'Add a withdrawal address',
      description:
        'Register an EVM address to receive withdrawals and payouts (POST /api/v1/withdrawal-addresses). Needs a fresh step-up of this ' +
        'credential (wallet_step_up). A new address holds its first transfer for review.',
      inputSchema: {
        address: z
          .string()
          .regex(/^0x[0-9a-fA-F]{40}$/)
          .describe('0x and 40 hex digits; the zero address is refused.'),
        label: z.string().min(1).max(200).optional(),
        idempotency_key: idempotencyKey,
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ idempotency_key, ...body }) =>
      call(api, { method: 'POST', path: '/api/v1/withdrawal-addresses', body, idempotencyKey: idempotency_key ?? true }),
  );

  server.registerTool(
    'wallet_step_up_challenge',
    {
      title: 'Wallet step-up, step 1',
      description:
        "Agent accounts: an EIP-4361 message for the account's sign-in wallet (POST /api/v1/account/step-up/challenge). Sign it exactly " +
        'as returned with EIP-191 personal_sign and pass message and signature to wallet_step_up. A key is stepped up only this way; ' +
        'a person steps up an interactive session instead.',
      inputSchema: {},
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    () => call(api, { method: 'POST', path: '/api/v1/account/step-up/challenge' }),
  );

  server.registerTool(
    'wallet_step_up',
    {
      title: 'Wallet step-up, step 2',
      description:
        'Step this credential up with the signed challenge (POST /api/v1/account/step-up): money out and new addresses then pass for ' +
        'the step-up’s lifetime (expires_at). A step-up never adds a scope.',
      inputSchema: {
        message: z.string().min(1).max(4096).describe('The message of wallet_step_up_challenge, exactly.'),
        signature: z
          .string()
          .regex(/^0x([0-9a-fA-F]{128}|[0-9a-fA-F]{130})$/)
          .describe("The sign-in wallet's EIP-191 signature of it."),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    ({ message, signature }) => call(api, { method: 'POST', path: '/api/v1/account/step-up', body: { wallet: { message, signature } } }),
  );

  server.registerTool(
    'withdraw',
    {
      title: 'Withdraw or be paid out',
      description:
        'Send USDC to a withdrawal address (POST /api/v1/withdrawals). balance names what is drawn: available (deposits, top-ups, refunds; ' +
        'needs the renter scope) or payable (host earnings; needs the host scope). Needs a fresh step-up (wallet_step_up). The amount is ' +
        'locked at once; the transfer is then paid automatically or held for an operator’s review (hold_reasons say why).',
      inputSchema: {
        balance: z
          .enum(['available', 'payable'])
          .describe('available: a withdrawal; payable: a payout of matured host earnings (pending earnings cannot be paid out).'),
        amount_micro: decimal.describe('Micro-USDC to send, e.g. "5000000" for 5 USDC.'),
        withdrawal_address_id: uuid.describe('An id from withdrawal_addresses.'),
        network: z
          .string()
          .regex(/^[a-z0-9][a-z0-9-]{0,31}$/)
          .optional()
          .describe('Default: the primary network.'),
        idempotency_key: idempotencyKey,
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    ({ idempotency_key, ...body }) =>
      call(api, { method: 'POST', path: '/api/v1/withdrawals', body, idempotencyKey: idempotency_key ?? true }),
  );
}
