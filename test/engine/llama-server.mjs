// A real OpenAI-compatible engine on CPU for tests: llama.cpp through node-llama-cpp (its prebuilt CPU binary), loading
// the GGUF model at ENGINE_MODEL_PATH, behind a small HTTP server of ours: GET /health, GET /v1/models,
// POST /v1/chat/completions and POST /v1/completions, JSON or `stream: true` server-sent events with one event per
// decoded text chunk as llama.cpp produces it. It answers only with the per-job key it was started with
// (ARK_ENGINE_API_KEY), like the engines the agent starts. Requests are served one at a time on one context sequence
// (a queue), and a client that disconnects aborts its generation.
// Decoding is greedy unless the request sets a temperature, so the same model and prompt give the same answer.
import { createServer } from 'node:http';
import { getLlama, LlamaCompletion } from 'node-llama-cpp';

const port = Number(process.env.ENGINE_PORT ?? '8000');
const host = process.env.ENGINE_HOST ?? '127.0.0.1';
const modelName = process.env.ENGINE_MODEL ?? 'ark-test-tiny';
const modelPath = process.env.ENGINE_MODEL_PATH ?? '/engine/model.gguf';
const apiKey = process.env.ARK_ENGINE_API_KEY ?? '';
const MAX_TOKENS = 900;
const created = Math.floor(Date.now() / 1000);

const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, progressLogs: false, logLevel: 'error' });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const context = await model.createContext({ contextSize: 1024, sequences: 1, threads: 1 });
const completion = new LlamaCompletion({ contextSequence: context.getSequence() });

let queue = Promise.resolve();
/** Runs `work` after every earlier request's generation (one sequence, one generation at a time). */
function serialized(work) {
  const run = queue.then(work, work);
  queue = run.catch(() => undefined);
  return run;
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

/** A chat request's prompt: each message on its own line as `role: content`, then the assistant's turn. */
function chatPrompt(messages) {
  const lines = (Array.isArray(messages) ? messages : []).map(
    (m) => `${String(m?.role ?? 'user')}: ${typeof m?.content === 'string' ? m.content : ''}`,
  );
  return `${lines.join('\n')}\nassistant:`;
}

const finishReason = (stopReason) => (stopReason === 'maxTokens' ? 'length' : 'stop');

async function complete(req, res, chat) {
  let request;
  try {
    request = JSON.parse(await readBody(req));
  } catch {
    return json(res, 400, { error: { message: 'invalid JSON', type: 'invalid_request_error' } });
  }
  const prompt = chat ? chatPrompt(request.messages) : String(request.prompt ?? '');
  const maxTokens = Math.max(1, Math.min(Number(request.max_tokens ?? 16) || 16, MAX_TOKENS));
  const temperature = typeof request.temperature === 'number' ? request.temperature : 0;
  const id = `${chat ? 'chatcmpl' : 'cmpl'}-${Date.now().toString(36)}`;
  const object = chat ? 'chat.completion' : 'text_completion';
  const promptTokens = model.tokenize(prompt).length;
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });

  if (request.stream !== true) {
    let completionTokens = 0;
    const result = await serialized(() =>
      completion.generateCompletionWithMeta(prompt, {
        maxTokens,
        temperature,
        signal: abort.signal,
        onToken: (tokens) => {
          completionTokens += tokens.length;
        },
      }),
    );
    return json(res, 200, {
      id,
      object,
      created,
      model: modelName,
      choices: [
        chat
          ? { index: 0, message: { role: 'assistant', content: result.response }, finish_reason: finishReason(result.metadata.stopReason) }
          : { index: 0, text: result.response, finish_reason: finishReason(result.metadata.stopReason), logprobs: null },
      ],
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
    });
  }

  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (text, finish) => {
    const choice = chat
      ? { index: 0, delta: finish === null ? { content: text } : {}, finish_reason: finish }
      : { index: 0, text, finish_reason: finish, logprobs: null };
    res.write(
      `data: ${JSON.stringify({ id, object: chat ? 'chat.completion.chunk' : 'text_completion', created, model: modelName, choices: [choice] })}\n\n`,
    );
  };
  if (chat)
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: modelName, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`,
    );
  try {
    const result = await serialized(() =>
      completion.generateCompletionWithMeta(prompt, {
        maxTokens,
        temperature,
        signal: abort.signal,
        stopOnAbortSignal: true,
        onTextChunk: (text) => event(text, null),
      }),
    );
    if (abort.signal.aborted) return;
    event('', finishReason(result.metadata.stopReason));
    res.end('data: [DONE]\n\n');
  } catch (error) {
    if (abort.signal.aborted) return;
    res.end(`data: ${JSON.stringify({ error: { message: String(error?.message ?? error), type: 'server_error' } })}\n\n`);
  }
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://engine');
  if (req.method === 'GET' && url.pathname === '/health') return json(res, 200, { status: 'ok' });
  if (apiKey !== '' && req.headers.authorization !== `Bearer ${apiKey}`) {
    return json(res, 401, { error: { message: 'invalid api key', type: 'invalid_request_error', code: 'invalid_api_key' } });
  }
  if (req.method === 'GET' && url.pathname === '/v1/models') {
    return json(res, 200, { object: 'list', data: [{ id: modelName, object: 'model', created, owned_by: 'ark-test' }] });
  }
  if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return void complete(req, res, true).catch(() => res.destroy());
  if (req.method === 'POST' && url.pathname === '/v1/completions') return void complete(req, res, false).catch(() => res.destroy());
  return json(res, 404, { error: { message: 'not found', type: 'invalid_request_error' } });
});
server.listen(port, host, () => process.stdout.write(`engine listening on ${host}:${port} with ${modelPath}\n`));
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
