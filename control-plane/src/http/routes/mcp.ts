import { type ArkApi, buildArkMcpServer, parseAnswerBody, requestHeaders, requestTarget } from '@ark/mcp';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import type { TypedApp } from '../typed-app.js';

// The MCP endpoint for AI agents (issue 13, item 5): the Model Context Protocol's streamable HTTP transport at
// POST /mcp, stateless (a fresh server and transport per request, answers as JSON, no session), with the tools of
// @ark/mcp. The route requires the renter scope like the operations its tools call; each tool then calls the public
// API in this same process (app.inject) with the credential this request carried, so every route's own checks
// (scope, ownership, verification, idempotency, rate limits) apply to a tool call exactly as to a direct one.
// GET and DELETE /mcp answer 405 (a stateless server offers no event stream and no session to end), as the
// transport's specification allows. Not a contract operation: hidden from /openapi.json.

export const MCP_PATH = '/mcp';

/** A JSON-RPC message, or a small batch of them; the transport validates each against the protocol's own schemas. */
const JsonRpcMessage = Type.Object({ jsonrpc: Type.Literal('2.0') }, { additionalProperties: true });
const McpBody = Type.Union([JsonRpcMessage, Type.Array(JsonRpcMessage, { minItems: 1, maxItems: 32 })]);

/** The public API, in process, as the caller of `request`. */
function inProcessApi(app: TypedApp, request: FastifyRequest): ArkApi {
  const authorization = request.headers.authorization ?? '';
  return async (call) => {
    const answer = await app.inject({
      method: call.method,
      url: requestTarget(call),
      headers: { ...requestHeaders(call), authorization },
      ...(call.body !== undefined ? { payload: JSON.stringify(call.body) } : {}),
      // Rate limits count the agent's own address.
      remoteAddress: request.ip,
    });
    return { status: answer.statusCode, body: parseAnswerBody(answer.body) };
  };
}

/** The request as the web-standard transport reads it (the body is handed over already parsed). */
function webRequest(request: FastifyRequest, publicBaseUrl: string): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(new URL(MCP_PATH, publicBaseUrl), { method: request.method, headers });
}

export function registerMcpRoutes(app: TypedApp, ctx: AppContext): void {
  app.post(MCP_PATH, { config: { auth: { scope: 'renter' } }, schema: { hide: true, body: McpBody } }, async (request, reply) => {
    const server = buildArkMcpServer(inProcessApi(app, request));
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      const response = await transport.handleRequest(webRequest(request, ctx.config.publicBaseUrl), { parsedBody: request.body });
      const text = await response.text();
      reply.code(response.status);
      response.headers.forEach((value, name) => {
        if (name !== 'content-length') reply.header(name, value);
      });
      return reply.send(text === '' ? undefined : text);
    } finally {
      await server.close();
    }
  });
}
