import { readFileSync } from 'node:fs';
import { CliError, EXIT } from './exit-codes.js';

// Secrets never travel on the command line (they would land in shell history and `ps`): they come from an
// environment variable or from standard input.

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The first line of standard input, trimmed; a usage error when stdin is a terminal or empty. */
export async function secretFromStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) throw new CliError(EXIT.usage, 'USAGE', `pipe the ${what} on standard input`);
  const line = (await readStdin()).split('\n')[0]?.trim() ?? '';
  if (line === '') throw new CliError(EXIT.usage, 'USAGE', `no ${what} on standard input`);
  return line;
}

export function readTextFile(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(
      EXIT.usage,
      'USAGE',
      `cannot read the ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}
