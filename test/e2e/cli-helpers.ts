// The `ark` CLI as a user runs it: its installed entry point (cli/bin/ark.mjs) as a child process, with its own
// config directory and environment, answering its exit code, stdout and stderr. Nothing is parsed but its output.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { arkBundle } from '../harness/bundles.js';
import { repoRoot } from './host-side-helpers.js';

export const arkBin = join(repoRoot, 'cli', 'bin', 'ark.mjs');

export interface ArkRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (for --json runs). */
  json: any;
}

export interface ArkOptions {
  env?: NodeJS.ProcessEnv;
  input?: string;
  timeoutMs?: number;
}

/** A fresh config directory, so no test reads another's (or the developer's) stored key. */
export function arkConfigDir(): string {
  return mkdtempSync(join(tmpdir(), 'ark-cli-config-'));
}

export function ark(args: string[], options: ArkOptions = {}): Promise<ArkRun> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, ARK_API_KEY: '', ARK_PASSWORD: '', ARK_URL: '', ...options.env };
    const child = spawn(process.execPath, [arkBundle, ...args], { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      let json: any;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Fails with the whole output when the run did not exit as expected. */
export function expectExit(run: ArkRun, code: number): ArkRun {
  if (run.code !== code)
    throw new Error(`ark exited ${run.code}, expected ${code}\n--- stdout ---\n${run.stdout}\n--- stderr ---\n${run.stderr}`);
  return run;
}
