import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** An ARK_CHAINS file naming Base with USDC and ETH (nothing listens at its RPC URL: for tests that read no chain). */
export function writeChainsFile(rpcUrl = 'http://127.0.0.1:9'): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ark-chains-')), 'chains.json');
  writeFileSync(
    file,
    JSON.stringify({
      networks: [
        {
          name: 'base',
          chain_id: 8453,
          rpc_url: rpcUrl,
          assets: [{ symbol: 'USDC', address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', decimals: 6 }],
          native: { symbol: 'ETH', decimals: 18, price_feed: `0x${'f'.repeat(40)}`, spread_bps: 100 },
        },
      ],
    }),
  );
  return file;
}
