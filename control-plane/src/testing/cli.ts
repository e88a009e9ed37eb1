import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The renter's CLI (`ark`, cli/bin/ark.mjs) against a control plane a test started and listens with: spawned without
// blocking, since the control plane answers from the test's own process. Its own config directory each run.

export const ARK_CLI_BIN = fileURLToPath(new URL('../../../cli/bin/ark.mjs', import.meta.url));

/** `ark <args>` with this URL and key; resolves its stdout, rejects with its stderr when it exits non-zero. */
export async function runArk(args: string[], target: { baseUrl: string; apiKey: string }): Promise<string> {
  const configDir = mkdtempSync(join(tmpdir(), 'ark-'));
  try {
    return await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [ARK_CLI_BIN, ...args],
        {
          env: { PATH: process.env.PATH ?? '', ARK_URL: target.baseUrl, ARK_API_KEY: target.apiKey, ARK_CONFIG_DIR: configDir },
          timeout: 60_000,
        },
        (error, out, err) => (error ? reject(new Error(`${error.message}: ${err}`)) : resolve(out)),
      ),
    );
  } finally {
    rmSync(configDir, { recursive: true, force: true });
  }
}
