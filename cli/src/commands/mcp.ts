import type { Command } from 'commander';
import { resolveConfig } from '../config.js';
import { EXIT } from '../exit-codes.js';

// `ark mcp`: the Ark MCP server on stdio (the @ark/mcp package, the same tools as the control plane's POST /mcp), with
// the credentials the CLI resolves: --url / ARK_URL / the stored URL, and ARK_API_KEY or the key `ark login` stored.
// An MCP client (an agent's runtime, an IDE) spawns `ark mcp` and speaks JSON-RPC on its stdin and stdout.

export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description('Serve the renter tools over the Model Context Protocol on stdio (for an MCP client to spawn)')
    .action(async () => {
      const config = resolveConfig(program.opts<{ url?: string }>());
      if (config.apiKey === null) {
        process.stderr.write('ark mcp: no API key: set ARK_API_KEY or run `ark login` (a key with the renter scope)\n');
        process.exitCode = EXIT.auth;
        return;
      }
      // Loaded here: the MCP SDK is only this command's weight. stdout is the protocol from here on; logs go to stderr.
      const { runStdio } = await import('@ark/mcp/stdio');
      await runStdio({ baseUrl: config.url, apiKey: config.apiKey });
    });
}
