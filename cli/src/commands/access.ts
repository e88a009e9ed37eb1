import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { action } from '../action.js';
import { parseAnswer } from '../client.js';
import type { CommandContext } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';
import { readStdin } from '../input.js';

// Reaching a running job: the system ssh/sftp with the host key pinned to the fingerprint the access endpoint
// reports (no trust-on-first-use prompt), and the OpenAI-compatible relay for model jobs.

interface Access {
  mode: string;
  endpoints: Array<{ endpoint_id: string; kind: string; external_host: string; external_port: number }>;
  ssh_host_key_fingerprint: string;
  ssh_command: string;
  expires_at: string;
  api_key?: string;
}

/** SHA256:<base64 without padding> of an SSH public key blob, as `ssh-keygen -l` and the access endpoint write it. */
export function sshFingerprint(blobBase64: string): string {
  return `SHA256:${createHash('sha256').update(Buffer.from(blobBase64, 'base64')).digest('base64').replace(/=+$/, '')}`;
}

/**
 * Reads the endpoint's host keys with ssh-keyscan and keeps the one whose fingerprint is the reported one: that key,
 * and only that key, goes into a throwaway known_hosts, so ssh checks the host strictly against it.
 */
export function pinnedHostKey(host: string, port: number, fingerprint: string): { type: string; blob: string } {
  const scan = spawnSync('ssh-keyscan', ['-T', '10', '-p', String(port), host], { encoding: 'utf8', timeout: 20_000 });
  if (scan.error !== undefined) throw new CliError(EXIT.apiError, 'SSH_KEYSCAN_FAILED', `ssh-keyscan: ${scan.error.message}`);
  const keys = scan.stdout
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => line.trim().split(/\s+/))
    .filter((parts) => parts.length >= 3)
    .map((parts) => ({ type: parts[1] as string, blob: parts[2] as string }));
  const match = keys.find((key) => sshFingerprint(key.blob) === fingerprint);
  if (match === undefined) {
    throw new CliError(
      EXIT.apiError,
      'HOST_KEY_MISMATCH',
      `the SSH endpoint ${host}:${port} did not present the host key Ark reports (${fingerprint}); not connecting` +
        (keys.length === 0 ? ` (ssh-keyscan read no key: ${scan.stderr.trim()})` : ''),
    );
  }
  return match;
}

async function accessOf(ctx: CommandContext, jobId: string): Promise<Access> {
  return ctx.api.get<Access>(`/api/v1/jobs/${encodeURIComponent(jobId)}/access`);
}

function sshEndpoint(access: Access, jobId: string): { host: string; port: number; user: string } {
  const endpoint = access.endpoints.find((e) => e.kind === 'ssh') ?? access.endpoints.find((e) => e.kind === 'sftp-retrieval');
  if (endpoint === undefined) throw new CliError(EXIT.apiError, 'NO_SSH_ENDPOINT', `job ${jobId} has no SSH endpoint`);
  const user = /\s([^\s@]+)@\S+$/.exec(access.ssh_command)?.[1] ?? 'root';
  return { host: endpoint.external_host, port: endpoint.external_port, user };
}

/** Runs ssh or sftp with the pinned key; answers its exit code. */
async function runPinned(
  ctx: CommandContext,
  program: 'ssh' | 'sftp',
  jobId: string,
  options: { identity?: string; print?: boolean },
  extra: string[],
): Promise<number> {
  const access = await accessOf(ctx, jobId);
  const { host, port, user } = sshEndpoint(access, jobId);
  const key = pinnedHostKey(host, port, access.ssh_host_key_fingerprint);
  const dir = mkdtempSync(join(tmpdir(), 'ark-ssh-'));
  const alias = `ark-job-${jobId}`;
  const knownHosts = join(dir, 'known_hosts');
  writeFileSync(knownHosts, `${alias} ${key.type} ${key.blob}\n`, { mode: 0o600 });
  const args = [
    program === 'ssh' ? '-p' : '-P',
    String(port),
    '-o',
    `HostKeyAlias=${alias}`,
    '-o',
    `UserKnownHostsFile=${knownHosts}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'UpdateHostKeys=no',
    '-o',
    'CheckHostIP=no',
    ...(options.identity === undefined ? [] : ['-i', options.identity, '-o', 'IdentitiesOnly=yes']),
  ];
  const target = `${user}@${host}`;
  const argv = program === 'ssh' ? [...args, target, ...extra] : [...args, ...extra, target];
  if (options.print) {
    ctx.out.result({ command: program, args: argv, known_hosts: knownHosts, host_key: `${key.type} ${key.blob}` }, () =>
      ctx.out.line([program, ...argv].join(' ')),
    );
    return EXIT.ok;
  }
  ctx.out.note(`Host key pinned to ${access.ssh_host_key_fingerprint} (mode ${access.mode}).`);
  try {
    return await new Promise<number>((resolve, reject) => {
      const child = spawn(program, argv, { stdio: 'inherit' });
      child.once('error', (error) => reject(new CliError(EXIT.apiError, 'SPAWN_FAILED', `${program}: ${error.message}`)));
      child.once('exit', (code, signal) => resolve(code ?? (signal === 'SIGINT' ? EXIT.interrupted : 255)));
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function registerAccessCommands(program: Command): void {
  program
    .command('ssh <job-id> [command...]')
    .description('Open a shell (or run a command) in a running job with the system ssh, host key pinned; exits with ssh’s code')
    .option('-i, --identity <file>', 'private key for ssh')
    .option('--print', 'print the ssh command (and the pinned known_hosts) instead of running it')
    .action(
      action(async (ctx, jobId: string, command: string[], options: { identity?: string; print?: boolean }) =>
        runPinned(ctx, 'ssh', jobId, options, command),
      ),
    );

  program
    .command('sftp <job-id> [sftp-args...]')
    .description('Open sftp to a running job (or a stopped one within its retrieval window), host key pinned; e.g. -- -b batch.txt')
    .option('-i, --identity <file>', 'private key for sftp')
    .option('--print', 'print the sftp command instead of running it')
    .action(
      action(async (ctx, jobId: string, extra: string[], options: { identity?: string; print?: boolean }) =>
        runPinned(ctx, 'sftp', jobId, options, extra),
      ),
    );

  program
    .command('chat <job-id> [message...]')
    .description('Chat with a model job through the relay, streaming the answer (the message from the arguments or stdin)')
    .option('--model <model>', 'model name (default: the first the engine lists)')
    .option('--system <text>', 'system prompt')
    .option('--max-tokens <n>', 'most tokens to generate')
    .action(
      action(async (ctx, jobId: string, words: string[], options: { model?: string; system?: string; maxTokens?: string }) => {
        const text = words.length > 0 ? words.join(' ') : process.stdin.isTTY ? '' : (await readStdin()).trim();
        if (text === '') throw new CliError(EXIT.usage, 'USAGE', 'give a message as arguments or on stdin');
        const base = `/api/v1/jobs/${encodeURIComponent(jobId)}/openai/v1`;
        let model = options.model;
        if (model === undefined) {
          const models = await ctx.api.get<{ data: Array<{ id: string }> }>(`${base}/models`);
          model = models.data[0]?.id;
          if (model === undefined) throw new CliError(EXIT.apiError, 'NO_MODEL', 'the engine lists no model');
        }
        const messages = [
          ...(options.system === undefined ? [] : [{ role: 'system', content: options.system }]),
          { role: 'user', content: text },
        ];
        const response = await ctx.api.raw('POST', `${base}/chat/completions`, {
          body: { model, stream: true, messages, ...(options.maxTokens === undefined ? {} : { max_tokens: Number(options.maxTokens) }) },
          headers: { accept: 'text/event-stream' },
        });
        if (!response.ok || response.body === null) await parseAnswer(response);
        let content = '';
        let chunks = 0;
        let finish: string | null = null;
        let buffer = '';
        const decoder = new TextDecoder();
        for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(bytes, { stream: true });
          let newline = buffer.indexOf('\n');
          while (newline >= 0) {
            const line = buffer.slice(0, newline).trim();
            buffer = buffer.slice(newline + 1);
            newline = buffer.indexOf('\n');
            if (!line.startsWith('data:')) continue;
            const data = line.slice(5).trim();
            if (data === '[DONE]') continue;
            const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string }; finish_reason?: string | null }> };
            const piece = chunk.choices?.[0]?.delta?.content ?? '';
            finish = chunk.choices?.[0]?.finish_reason ?? finish;
            chunks += 1;
            content += piece;
            if (!ctx.out.json) process.stdout.write(piece);
          }
        }
        ctx.out.result({ job_id: jobId, model, content, chunks, finish_reason: finish }, () => process.stdout.write('\n'));
      }),
    );
}
