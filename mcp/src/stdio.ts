import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { httpArkApi } from './api.js';
import { buildArkMcpServer } from './server.js';

export interface StdioOptions {
  /** Read for ARK_URL and ARK_API_KEY; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Win over ARK_URL and ARK_API_KEY (the `ark` CLI passes what `ark login` stored). */
  baseUrl?: string;
  apiKey?: string;
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
}

export const DEFAULT_ARK_URL = 'http://127.0.0.1:8080';

/** The stdio settings from the environment, or the reason they are unusable. */
export function stdioSettings(env: NodeJS.ProcessEnv): { baseUrl: string; apiKey: string } | { error: string } {
  const apiKey = env.ARK_API_KEY?.trim();
  if (!apiKey) return { error: 'ARK_API_KEY is not set: create an API key with the renter scope and export it.' };
  const baseUrl = env.ARK_URL?.trim() || DEFAULT_ARK_URL;
  try {
    const url = new URL(baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { error: `ARK_URL must be http or https: ${baseUrl}` };
  } catch {
    return { error: `ARK_URL is not a URL: ${baseUrl}` };
  }
  return { baseUrl, apiKey };
}

/**
 * Serves the Ark tools over stdio (what `ark-mcp` and `ark mcp` run): an MCP client spawns the process and talks
 * JSON-RPC on its stdin and stdout; every tool calls ARK_URL with ARK_API_KEY. Resolves once the transport is
 * connected; the process then lives until the client closes stdin. Logs go to stderr only (stdout is the protocol).
 */
export async function runStdio(options: StdioOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  const settings = stdioSettings({
    ...env,
    ...(options.baseUrl !== undefined ? { ARK_URL: options.baseUrl } : {}),
    ...(options.apiKey !== undefined ? { ARK_API_KEY: options.apiKey } : {}),
  });
  if ('error' in settings) throw new Error(settings.error);
  const server = buildArkMcpServer(httpArkApi(settings));
  const transport = new StdioServerTransport(
    options.stdin as ConstructorParameters<typeof StdioServerTransport>[0],
    options.stdout as ConstructorParameters<typeof StdioServerTransport>[1],
  );
  await server.connect(transport);
}
