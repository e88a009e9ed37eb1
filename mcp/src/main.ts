// ark-mcp: the Ark MCP server on stdio, configured by ARK_URL and ARK_API_KEY.
import { runStdio } from './stdio.js';

runStdio().catch((error: unknown) => {
  process.stderr.write(`ark-mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
});
