import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/index.js';
import { openConfiguredStore } from '../runtime.js';
import { findTemplate, isTemplatePublished, listPublishedTemplates } from '../store/templates.js';
import { insertAccount } from '../store/accounts.js';
import type { Executor } from '../store/db.js';
import { insertMachine } from '../store/machines.js';
import { issueEnrollmentToken } from '../services/hosting/enrollment.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { CliRefusal } from './context.js';
import { importTemplatesCommand, qualifyTemplateCommand, readImportFile } from './templates.js';
import { type TestCliContext, testCliContext } from './testing.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const examplesPath = join(repoRoot, 'deploy/templates/examples.json');
const examples = JSON.parse(readFileSync(examplesPath, 'utf8')) as Array<Record<string, any>>;
const now = new Date('2026-05-01T12:00:00.000Z');

const GIB = 1_073_741_824n;

/** An enrolled machine with these GPUs, owned by a fresh host. */
async function seedMachine(db: Executor, now: Date, vramBytes: bigint[] = [80n * GIB]): Promise<string> {
  const owner = await insertAccount(db, {
    email: `host-${randomUUID()}@example.test`,
    passwordHash: null,
    name: null,
    role: 'host',
    emailVerified: true,
    now,
  });
  const token = await issueEnrollmentToken(db, { accountId: owner.id, pairingId: null, goLive: false, now });
  const id = randomUUID();
  await insertMachine(db, {
    id,
    ownerAccountId: owner.id,
    publicKey: Buffer.alloc(32, 7).toString('base64'),
    manifest: {
      hostname: 'rig',
      gpus: vramBytes.map((v, i) => ({ pci_address: `0000:0${i}:00.0`, model: 'Test GPU', vram_bytes: v.toString() })),
      cpu: { model: 'cpu', cores: 8 },
      ram_bytes: (64n * GIB).toString(),
      disk_bytes: (512n * GIB).toString(),
      os: 'linux',
      agent_version: 'test',
    },
    goLive: false,
    enrollmentTokenId: token.id,
    pairingId: null,
    now,
  });
  return id;
}

async function refusalOf(promise: Promise<unknown>): Promise<string[]> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CliRefusal) return error.problems;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe.each(DIALECTS)('templates CLI on %s', (dialect) => {
  let store: TestStore;
  let cli: TestCliContext;
  beforeAll(async () => {
    store = await createTestStore(dialect);
    cli = testCliContext(store, now);
  });
  afterAll(async () => {
    await cli.close();
    await store.destroy();
  });

  it('imports the examples, then reports them unchanged; audited once', async () => {
    const first = await importTemplatesCommand(cli, examples);
    expect(first).toMatchObject({ total: 3, created: 3, updated: 0, unchanged: 0 });
    expect(first.templates.map((t) => t.template_id)).toEqual(examples.map((e) => e.template_id));
    await cli.clock.advance(1000);
    const again = await importTemplatesCommand(cli, examples);
    cli.clock.set(now);
    expect(again).toMatchObject({ total: 3, created: 0, updated: 0, unchanged: 3 });
    const audit = await store.db.selectFrom('audit_log').selectAll().where('action', '=', 'template.imported').execute();
    expect(audit).toHaveLength(1);
    // Imported is not published: nothing is listed until a machine qualifies.
    expect(await listPublishedTemplates(store.db, {}, null, 10)).toEqual([]);
  });

  it('refuses a bad file whole, naming each item and field, and writes nothing', async () => {
    const [first, second, third] = structuredClone(examples) as [Record<string, any>, Record<string, any>, Record<string, any>];
    first.description = 'changed';
    second.spec.ports[0].container_port = 0;
    delete third.spec.engine;
    const bad = [first, second, third];
    const problems = await refusalOf(importTemplatesCommand(cli, bad));
    expect(problems).toEqual([
      'templates[1].spec.ports[0].container_port must be >= 1',
      'templates[2].spec.engine is required for kind "model"',
    ]);
    expect((await findTemplate(store.db, examples[0]?.template_id))?.description).toBe(examples[0]?.description);
  });

  it('qualifies a template for a machine, audited, and publishes it', async () => {
    const templateId = examples[0]?.template_id as string;
    const machineId = await seedMachine(store.db, now);
    const out = await qualifyTemplateCommand(cli, { templateId: templateId.toUpperCase(), machineId, reason: 'smoke test passed' });
    expect(out).toEqual({
      template_id: templateId,
      machine_id: machineId,
      source: 'admin',
      qualified_at: now.toISOString(),
      published: true,
    });
    expect(await isTemplatePublished(store.db, templateId)).toBe(true);
    const audit = await store.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'template.qualify')
      .where('subject', '=', templateId)
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]?.actor_account_id).toBeNull();
    expect(JSON.parse(audit[0]?.detail as string)).toEqual({ machine_id: machineId, reason: 'smoke test passed', via: 'cli' });

    expect(await refusalOf(qualifyTemplateCommand(cli, { templateId: 'x', machineId: 'y', reason: '' }))).toEqual([
      '--template must be a UUID, got "x"',
      '--machine must be a UUID, got "y"',
      '--reason must be 1 to 2000 characters',
    ]);
    await expect(qualifyTemplateCommand(cli, { templateId: randomUUID(), machineId, reason: 'r' })).rejects.toThrow(
      'No template has this id.',
    );
    await expect(qualifyTemplateCommand(cli, { templateId, machineId: randomUUID(), reason: 'r' })).rejects.toThrow(
      'No machine has this id.',
    );
  });
});

describe('readImportFile', () => {
  it('refuses missing and non-JSON files by name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ark-templates-'));
    try {
      const file = join(dir, 'bad.json');
      writeFileSync(file, '[{');
      expect(() => readImportFile(file)).toThrow(/bad\.json is not valid JSON/);
      expect(() => readImportFile(join(dir, 'missing.json'))).toThrow(/cannot read .*missing\.json/);
      expect(readImportFile(examplesPath)).toEqual(examples);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('pnpm ark-cp templates import (a real process on an embedded store)', () => {
  const run = promisify(execFile);
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'ark-cli-templates-'));
  });
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  const cli = (args: string[]) =>
    run('pnpm', ['--silent', 'ark-cp', ...args], {
      cwd: repoRoot,
      env: { ...process.env, ARK_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'silent' },
    }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  it('imports a file and prints a summary; a bad file exits 1 naming the item', async () => {
    const ok = await cli(['templates', 'import', '--file', examplesPath]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ file: resolve(examplesPath), total: 3, created: 3, unchanged: 0 });

    const badFile = join(dataDir, 'bad.json');
    writeFileSync(badFile, JSON.stringify([{ ...examples[0], kind: 'gpu' }]));
    const bad = await cli(['templates', 'import', '--file', badFile]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('ark-cp templates import: templates[0].kind must be one of "model", "classical", "custom"');

    const missing = await cli(['templates', 'import']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('--file is required');

    const store = await openConfiguredStore(loadConfig({ ARK_DATA_DIR: dataDir }));
    try {
      expect((await store.db.selectFrom('templates').select('name').orderBy('name').execute()).map((r) => r.name)).toEqual([
        'busybox-web',
        'llama-3.1-8b-instruct-vllm',
        'pytorch-jupyter',
      ]);
    } finally {
      await store.close();
    }
  });
});
