// A deterministic OpenAI-compatible engine for tests: GET /v1/models, POST /v1/chat/completions and
// POST /v1/completions, JSON or `stream: true` server-sent events, one token every ENGINE_TOKEN_DELAY_MS.
// It answers only with the per-job key it was started with (ARK_ENGINE_API_KEY), like a real engine started by
// the agent. Plain JavaScript on Node's standard library: it runs inside the job container of the e2e tests.
// A prompt containing FAIL_MIDSTREAM gets an error event after two tokens, and the stream then ends.
import { createServer } from 'node:http';

const port = Number(process.env.ENGINE_PORT ?? '8000');
const host = process.env.ENGINE_HOST ?? '127.0.0.1';
const model = process.env.ENGINE_MODEL ?? 'ark-test-tiny';
const delayMs = Number(process.env.ENGINE_TOKEN_DELAY_MS ?? '50');
const apiKey = process.env.ARK_ENGINE_API_KEY ?? '';
const MAX_TOKENS = 4096;
const created = Math.floor(Date.now() / 1000);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// No delay: yield to the event loop between tokens (each still its own write), as fast as Node writes them.
const pause = () => (delayMs > 0 ? sleep(delayMs) : new Promise((resolve) => setImmediate(resolve)));

/** The answer's tokens: a fixed function of the prompt, so tests can predict it. */
function tokensFor(prompt, maxTokens) {
  const words = prompt.split(/\s+/).filter((word) => word !== '');
  const count = Math.max(1, Math.min(maxTokens, MAX_TOKENS));
  const tokens = [];
  for (let i = 0; i < count; i += 1) tokens.push(`${i === 0 ? '' : ' '}${words.length === 0 ? 'token' : words[i % words.length]}-${i}`);
  return tokens;
}

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function complete(req, res, chat) {
  let request;
  try {
    request = JSON.parse(await readBody(req));
  } catch {
    return json(res, 400, { error: { message: 'invalid JSON', type: 'invalid_request_error' } });
  }
  const prompt = chat
    ? (Array.isArray(request.messages) ? request.messages : []).map((m) => (typeof m?.content === 'string' ? m.content : '')).join(' ')
    : String(request.prompt ?? '');
  const tokens = tokensFor(prompt, Number(request.max_tokens ?? 8));
  const id = `${chat ? 'chatcmpl' : 'cmpl'}-${Date.now().toString(36)}`;
  const object = chat ? 'chat.completion' : 'text_completion';
  if (request.stream !== true) {
    await sleep(delayMs * tokens.length);
    const text = tokens.join('');
    return json(res, 200, {
      id,
      object,
      created,
      model,
      choices: [
        chat
          ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'length' }
          : { index: 0, text, finish_reason: 'length', logprobs: null },
      ],
      usage: {
        prompt_tokens: prompt.split(/\s+/).length,
        completion_tokens: tokens.length,
        total_tokens: prompt.split(/\s+/).length + tokens.length,
      },
    });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let aborted = false;
  res.on('close', () => {
    aborted = !res.writableFinished;
  });
  const chunk = (delta, finish) => ({
    id,
    object: chat ? 'chat.completion.chunk' : 'text_completion',
    created,
    model,
    choices: [chat ? { index: 0, delta, finish_reason: finish } : { index: 0, text: delta.content ?? '', finish_reason: finish }],
  });
  if (chat) res.write(`data: ${JSON.stringify(chunk({ role: 'assistant', content: '' }, null))}\n\n`);
  for (const [i, token] of tokens.entries()) {
    await pause();
    if (aborted) return;
    if (i === 2 && prompt.includes('FAIL_MIDSTREAM')) {
      res.end(`data: ${JSON.stringify({ error: { message: 'the engine failed mid-stream', type: 'server_error' } })}\n\n`);
      return;
    }
    res.write(`data: ${JSON.stringify(chunk({ content: token }, null))}\n\n`);
  }
  res.write(`data: ${JSON.stringify(chunk({}, 'length'))}\n\n`);
  res.end('data: [DONE]\n\n');
}

const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/health') return json(res, 200, { status: 'ok' });
  if (apiKey === '' || req.headers.authorization !== `Bearer ${apiKey}`) {
    return json(res, 401, { error: { message: 'invalid api key', type: 'invalid_request_error', code: 'invalid_api_key' } });
  }
  if (req.method === 'GET' && path === '/v1/models') {
    return json(res, 200, { object: 'list', data: [{ id: model, object: 'model', created, owned_by: 'ark-test' }] });
  }
  if (req.method === 'POST' && (path === '/v1/chat/completions' || path === '/v1/completions')) {
    complete(req, res, path === '/v1/chat/completions').catch(() => res.destroy());
    return;
  }
  return json(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error' } });
});
server.listen(port, host);
process.on('SIGTERM', () => process.exit(0));
