import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { UUID_PATTERN } from '@ark/shared/limits';
import { importSummaryView, qualificationView } from '../views/templates.js';
import { type CliCommand, type CliContext, CliRefusal, printJson, required, text } from './context.js';

// Operator commands for the template catalog: import a file, qualify a machine by hand.

/** An import file larger than this is refused before it is read. */
const MAX_IMPORT_FILE_BYTES = 8 * 1_048_576;

/** Reads and parses an import file; refusals name the file. */
export function readImportFile(path: string): unknown {
  const file = resolve(path);
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    throw new CliRefusal(`cannot read ${file}`);
  }
  if (size > MAX_IMPORT_FILE_BYTES) throw new CliRefusal(`${file} is ${size} bytes; at most ${MAX_IMPORT_FILE_BYTES}`);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new CliRefusal(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * `templates import`: validates the whole document first (nothing is written when any item is wrong, and every
 * problem is named), then upserts every template by id in one transaction. Answers a summary.
 */
export async function importTemplatesCommand(ctx: Pick<CliContext, 'services'>, document: unknown) {
  // Loaded when the command runs: the importer brings the JSON Schema validator and the store.
  const { TemplateImportRefused } = await import('../services/templates/import.js');
  try {
    return importSummaryView(await ctx.services.templates.importCatalog(document));
  } catch (error) {
    if (error instanceof TemplateImportRefused) throw new CliRefusal(error.problems);
    throw error;
  }
}

export interface QualifyInput {
  templateId: string;
  machineId: string;
  reason: string;
}

/** `templates qualify`: the operator declares a machine able to run a template; audited. */
export async function qualifyTemplateCommand(ctx: Pick<CliContext, 'services'>, input: QualifyInput) {
  const problems: string[] = [];
  if (!UUID_PATTERN.test(input.templateId)) problems.push(`--template must be a UUID, got "${input.templateId}"`);
  if (!UUID_PATTERN.test(input.machineId)) problems.push(`--machine must be a UUID, got "${input.machineId}"`);
  if (input.reason.length < 1 || input.reason.length > 2000) problems.push('--reason must be 1 to 2000 characters');
  if (problems.length > 0) throw new CliRefusal(problems);
  return qualificationView(await ctx.services.templates.qualify({ ...input, actorAccountId: null, via: 'cli' }));
}

export const templateCommands: CliCommand[] = [
  {
    name: 'templates import',
    usage: 'templates import --file templates.json',
    options: { file: { type: 'string' } },
    async run(values, ctx) {
      const file = required(values, 'file');
      const summary = await importTemplatesCommand(ctx, readImportFile(file));
      printJson(ctx, { file: resolve(file), ...summary });
      return 0;
    },
  },
  {
    name: 'templates qualify',
    usage: 'templates qualify --template ID --machine ID [--reason TEXT]',
    options: { template: { type: 'string' }, machine: { type: 'string' }, reason: { type: 'string' } },
    async run(values, ctx) {
      const input = {
        templateId: required(values, 'template'),
        machineId: required(values, 'machine'),
        reason: text(values, 'reason') ?? 'qualified by the operator',
      };
      printJson(ctx, await qualifyTemplateCommand(ctx, input));
      return 0;
    },
  },
];
