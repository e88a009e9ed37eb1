import Table from 'cli-table3';
import { CliError, EXIT } from './exit-codes.js';

// Two faces of every command: --json prints one JSON document on stdout for scripts; otherwise tables
// (cli-table3) and short lines for people. Errors go to stderr as a line, or as {"error": {...}} on stdout with --json.

export interface OutputOptions {
  json: boolean;
  stdout?: NodeJS.WritableStream & { isTTY?: boolean };
  stderr?: NodeJS.WritableStream & { isTTY?: boolean };
}

export class Output {
  readonly json: boolean;
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };

  constructor(options: OutputOptions) {
    this.json = options.json;
    this.stdout = options.stdout ?? process.stdout;
    this.stderr = options.stderr ?? process.stderr;
  }

  /** A terminal on stdout, and not --json: progress bars, QR codes and colours are for people. */
  get interactive(): boolean {
    return !this.json && this.stdout.isTTY === true;
  }

  /** The result: JSON with --json, else what `human` prints. */
  result(value: unknown, human: () => void): void {
    if (this.json) this.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
    else human();
  }

  line(text = ''): void {
    this.stdout.write(`${text}\n`);
  }

  /** A note for people (progress, hints): stderr, so stdout stays the result; silent with --json. */
  note(text: string): void {
    if (!this.json) this.stderr.write(`${text}\n`);
  }

  /** Something a script's operator must see too (a lost connection being retried): stderr, also with --json. */
  warn(text: string): void {
    this.stderr.write(`${text}\n`);
  }

  table(head: string[], rows: Array<Array<string | number | null | undefined>>): void {
    const table = new Table({ head, style: { head: this.stdout.isTTY ? ['cyan'] : [], border: this.stdout.isTTY ? ['grey'] : [] } });
    for (const row of rows) table.push(row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))));
    this.line(table.toString());
  }

  /** Key/value pairs as a two-column table. */
  fields(pairs: Array<[string, string | number | boolean | null | undefined]>): void {
    const table = new Table({ style: { head: [], border: this.stdout.isTTY ? ['grey'] : [] } });
    for (const [name, value] of pairs) table.push({ [name]: value === null || value === undefined ? '-' : String(value) });
    this.line(table.toString());
  }

  error(error: unknown): number {
    const cliError =
      error instanceof CliError ? error : new CliError(EXIT.apiError, 'INTERNAL', error instanceof Error ? error.message : String(error));
    if (this.json) {
      this.stdout.write(
        `${JSON.stringify({ error: { code: cliError.code, message: cliError.message, exit_code: cliError.exitCode, ...cliError.details } }, null, 2)}\n`,
      );
    } else {
      const status = typeof cliError.details.status === 'number' ? ` (HTTP ${cliError.details.status})` : '';
      this.stderr.write(`ark: ${cliError.code}${status}: ${cliError.message}\n`);
    }
    return cliError.exitCode;
  }
}
