import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { UUID_PATTERN } from '@ark/shared';
import { systemClock } from '../clock.js';
import { validateTemplateImport } from '../domain/templates/import.js';
import { DomainError } from '../errors.js';
import { openConfiguredStore } from '../runtime.js';
import { appendAudit } from '../store/audit.js';
import type { Executor, Store } from '../store/db.js';
import { type ImportSummary, importTemplates, isTemplatePublished, recordAdminQualification } from '../store/templates.js';
import { type CliCommand, registerCliCommands } from './index.js';

// Operator commands for the template catalog: import a file, qualify a machine by hand.

type Values = Parameters<CliCommand['run']>[0];

/** A refusal the operator can act on: printed to stderr, exit code 1, nothing written. */
export class TemplateCliRefusal extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
  }
}

/** An import file larger than this is refused before it is read. */
const MAX_IMPORT_FILE_BYTES = 8 * 1_048_576;

function text(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

function required(values: Values, name: string): string {
  const value = text(values, name);
  if (value === undefined || value === '') throw new TemplateCliRefusal([`--${name} is required`]);
  return value;
}

/** Reads and parses an import file; refusals name the file. */
export function readImportFile(path: string): unknown {
  const file = resolve(path);
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    throw new TemplateCliRefusal([`cannot read ${file}`]);
  }
  if (size > MAX_IMPORT_FILE_BYTES) throw new TemplateCliRefusal([`${file} is ${size} bytes; at most ${MAX_IMPORT_FILE_BYTES}`]);
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new TemplateCliRefusal([`${file} is not valid JSON: ${(error as Error).message}`]);
  }
}

/**
 * `templates import`: validates the whole document first (nothing is written when any item is wrong), then upserts
 * every template by id in one transaction. Answers a summary.
 */
export async function importTemplatesCommand(store: Store, document: unknown, now: Date) {
  const validation = validateTemplateImport(document);
  if (!validation.ok) throw new TemplateCliRefusal(validation.errors);
  const summary = await store.db.transaction().execute(async (trx) => {
    const result = await importTemplates(trx, validation.templates, now);
    await appendImportAudit(trx, now, result);
    return result;
  });
  return summary;
}

async function appendImportAudit(trx: Executor, now: Date, summary: ImportSummary) {
  const changed = summary.templates.filter((t) => t.action !== 'unchanged').map((t) => ({ template_id: t.template_id, action: t.action }));
  if (changed.length > 0)
    await appendAudit(trx, { at: now, actorAccountId: null, action: 'template.imported', subject: null, detail: { changed } });
}

export interface QualifyInput {
  templateId: string;
  machineId: string;
  reason: string;
}

/** `templates qualify`: the operator declares a machine able to run a template; audited. */
export async function qualifyTemplateCommand(store: Store, input: QualifyInput, now: Date) {
  const problems: string[] = [];
  if (!UUID_PATTERN.test(input.templateId)) problems.push(`--template must be a UUID, got "${input.templateId}"`);
  if (!UUID_PATTERN.test(input.machineId)) problems.push(`--machine must be a UUID, got "${input.machineId}"`);
  if (input.reason.length < 1 || input.reason.length > 2000) problems.push('--reason must be 1 to 2000 characters');
  if (problems.length > 0) throw new TemplateCliRefusal(problems);
  const templateId = input.templateId.toLowerCase();
  return store.db.transaction().execute(async (trx) => {
    const qualification = await recordAdminQualification(trx, {
      templateId,
      machineId: input.machineId.toLowerCase(),
      now,
      actorAccountId: null,
      reason: input.reason,
      via: 'cli',
    });
    return {
      template_id: qualification.templateId,
      machine_id: qualification.machineId,
      source: qualification.source,
      qualified_at: qualification.qualifiedAt,
      published: await isTemplatePublished(trx, templateId),
    };
  });
}

async function withStore(
  name: string,
  config: Parameters<typeof openConfiguredStore>[0],
  run: (store: Store) => Promise<unknown>,
): Promise<number> {
  let store: Store | null = null;
  try {
    store = await openConfiguredStore(config);
    const result = await run(store);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof TemplateCliRefusal) {
      for (const problem of error.problems) process.stderr.write(`ark-cp ${name}: ${problem}\n`);
      return 1;
    }
    if (error instanceof DomainError) {
      process.stderr.write(`ark-cp ${name}: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    await store?.close();
  }
}

export const templateCommands: CliCommand[] = [
  {
    name: 'templates import',
    usage: 'templates import --file templates.json',
    options: { file: { type: 'string' } },
    run: (values, ctx) =>
      withStore('templates import', ctx.config, async (store) => {
        const file = required(values, 'file');
        const summary = await importTemplatesCommand(store, readImportFile(file), systemClock.now());
        return { file: resolve(file), ...summary };
      }),
  },
  {
    name: 'templates qualify',
    usage: 'templates qualify --template ID --machine ID [--reason TEXT]',
    options: { template: { type: 'string' }, machine: { type: 'string' }, reason: { type: 'string' } },
    run: (values, ctx) =>
      withStore('templates qualify', ctx.config, (store) =>
        qualifyTemplateCommand(
          store,
          {
            templateId: required(values, 'template'),
            machineId: required(values, 'machine'),
            reason: text(values, 'reason') ?? 'qualified by the operator',
          },
          systemClock.now(),
        ),
      ),
  },
];

registerCliCommands(templateCommands);
