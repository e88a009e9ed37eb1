import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ArkApi } from './api.js';
import { registerArkTools } from './tools.js';

export const SERVER_NAME = 'ark';
export const SERVER_VERSION = '0.1.0';

/** An MCP server whose tools are the renter's operations, each a call of `api` (one caller's credential). */
export function buildArkMcpServer(api: ArkApi): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, version: SERVER_VERSION },
    {
      instructions:
        'Ark rents GPU machines by the hour. Typical flow: search_offers (optionally with a template from list_templates), quote an offer, ' +
        'reserve_job with the quote_id within 60 seconds, poll job_status until RUNNING, and stop_job when done. Money is micro-USDC in ' +
        'decimal strings (1 USDC = 1000000); check balance first and use top_up_instructions or deposit_address to add funds.',
    },
  );
  registerArkTools(server, api);
  return server;
}
