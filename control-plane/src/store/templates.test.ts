import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DomainError } from '../errors.js';
import { type ImportedTemplate, validateTemplateImport } from '../domain/templates/import.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { insertAccount } from './accounts.js';
import type { Executor } from './db.js';
import { setHostingBlocked } from './hosts.js';
import { insertMachine } from './machines.js';
import { storeEnrollmentToken } from '../testing/credentials.js';
import {
  findPublishedTemplate,
  findTemplate,
  fitForMachine,
  importTemplates,
  isTemplatePublished,
  isTemplateQualifiedOn,
  listPublishedTemplates,
  recordAdminQualification,
  recordAgentQualification,
  templateFitCalculator,
} from './templates.js';

const GIB = 1_073_741_824n;
const t0 = new Date('2026-03-01T10:00:00.000Z');
const t1 = new Date('2026-03-01T11:00:00.000Z');
const digest = (c: string) => `registry.test/ark/${c}@sha256:${c.repeat(64).slice(0, 64)}`;

function doc(name: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'classical',
    name,
    description: `${name} template`,
    vram_fit: { min_vram_bytes: '0' },
    runtimes: [{ backend: 'cuda', image_digest: digest('a') }],
    spec: { ports: [{ container_port: 8080, protocol: 'http' }], environment: { A: '1' } },
    ...overrides,
  };
}

/** An enrolled machine with these GPUs, owned by a fresh host. */
async function seedMachine(db: Executor, vramBytes: bigint[] = [24n * GIB]): Promise<{ id: string; ownerAccountId: string }> {
  const owner = await insertAccount(db, {
    email: `host-${randomUUID()}@example.test`,
    passwordHash: null,
    name: null,
    role: 'host',
    emailVerified: true,
    now: t0,
  });
  const token = await storeEnrollmentToken(db, { accountId: owner.id, pairingId: null, goLive: false, now: t0 });
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
    now: t0,
  });
  return { id, ownerAccountId: owner.id };
}

function valid(items: unknown[]): ImportedTemplate[] {
  const result = validateTemplateImport(items);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.templates;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
  return 'resolved';
}

describe.each(DIALECTS)('template store on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.destroy();
  });
  beforeEach(async () => {
    await store.db.deleteFrom('template_qualifications').execute();
    await store.db.deleteFrom('template_runtimes').execute();
    await store.db.deleteFrom('templates').execute();
  });

  it('upserts by id: created, then unchanged, then updated with created_at kept', async () => {
    const first = await importTemplates(store.db, valid([doc('alpha'), doc('beta')]), t0);
    expect(first).toMatchObject({ total: 2, created: 2, updated: 0, unchanged: 0 });
    const again = await importTemplates(store.db, valid([doc('alpha'), doc('beta')]), t1);
    expect(again).toMatchObject({ total: 2, created: 0, updated: 0, unchanged: 2 });
    const alphaId = first.templates[0]?.templateId as string;
    expect((await findTemplate(store.db, alphaId))?.updatedAt).toBe(t0.toISOString());

    const changed = await importTemplates(
      store.db,
      valid([
        doc('alpha', {
          description: 'new words',
          runtimes: [
            { backend: 'rocm', image_digest: digest('b') },
            { backend: 'cuda', image_digest: digest('c') },
          ],
        }),
        doc('beta'),
      ]),
      t1,
    );
    expect(changed.templates.map((t) => t.action)).toEqual(['updated', 'unchanged']);
    const alpha = await findTemplate(store.db, alphaId);
    expect(alpha).toMatchObject({
      description: 'new words',
      createdAt: t0.toISOString(),
      updatedAt: t1.toISOString(),
      runtimes: [
        { backend: 'cuda', image_digest: digest('c') },
        { backend: 'rocm', image_digest: digest('b') },
      ],
      spec: { ports: [{ container_port: 8080, protocol: 'http' }], environment: { A: '1' } },
      minVramBytes: 0n,
      recommendedVramBytes: null,
    });
    expect(await store.db.selectFrom('templates').select('id').execute()).toHaveLength(2);
  });

  it('keeps large VRAM values exact and updates a renamed template by id', async () => {
    const id = randomUUID();
    await importTemplates(
      store.db,
      valid([
        doc('big', { template_id: id, vram_fit: { min_vram_bytes: '9223372036854775807', recommended_vram_bytes: '9223372036854775807' } }),
      ]),
      t0,
    );
    expect(await findTemplate(store.db, id)).toMatchObject({
      minVramBytes: 9_223_372_036_854_775_807n,
      recommendedVramBytes: 9_223_372_036_854_775_807n,
    });
    const renamed = await importTemplates(store.db, valid([doc('bigger', { template_id: id })]), t1);
    expect(renamed.templates[0]).toMatchObject({ templateId: id, name: 'bigger', action: 'updated' });
  });

  it('an item without id updates the template of the same name; a given id may not take a used name', async () => {
    const id = randomUUID();
    await importTemplates(store.db, valid([doc('gamma', { template_id: id })]), t0);
    const byName = await importTemplates(store.db, valid([doc('gamma', { description: 'by name' })]), t1);
    expect(byName.templates[0]).toMatchObject({ templateId: id, action: 'updated' });
    expect(await codeOf(importTemplates(store.db, valid([doc('gamma', { template_id: randomUUID() })]), t1))).toBe('TEMPLATE_NAME_TAKEN');
  });

  it('a failing item inside a transaction leaves nothing behind', async () => {
    await importTemplates(store.db, valid([doc('delta', { template_id: randomUUID() })]), t0);
    const attempt = store.db
      .transaction()
      .execute((trx) => importTemplates(trx, valid([doc('epsilon'), doc('delta', { template_id: randomUUID() })]), t1));
    expect(await codeOf(attempt)).toBe('TEMPLATE_NAME_TAKEN');
    expect((await store.db.selectFrom('templates').select('name').execute()).map((r) => r.name)).toEqual(['delta']);
  });

  it('lists only published templates, with each filter, in (name, id) pages', async () => {
    const imported = await importTemplates(
      store.db,
      valid([
        doc('a-shell'),
        doc('b-notebook', {
          kind: 'custom',
          vram_fit: { min_vram_bytes: (8n * GIB).toString() },
          runtimes: [{ backend: 'rocm', image_digest: digest('d') }],
        }),
        doc('c-llm', {
          kind: 'model',
          vram_fit: { min_vram_bytes: (24n * GIB).toString() },
          runtimes: [
            { backend: 'cuda', image_digest: digest('e') },
            { backend: 'rocm', image_digest: digest('f') },
          ],
          spec: {
            ports: [{ container_port: 8000, protocol: 'http' }],
            environment: {},
            engine: { name: 'vllm', model: 'm', api_port: 8000 },
          },
        }),
        doc('d-unqualified'),
      ]),
      t0,
    );
    const ids = Object.fromEntries(imported.templates.map((t) => [t.name, t.templateId]));
    const { id: machine, ownerAccountId } = await seedMachine(store.db);
    expect(await listPublishedTemplates(store.db, {}, null, 10)).toEqual([]);
    for (const name of ['a-shell', 'b-notebook', 'c-llm']) {
      await recordAdminQualification(store.db, {
        templateId: ids[name] as string,
        machineId: machine,
        now: t1,
        actorAccountId: null,
        reason: 'test',
        via: 'cli',
      });
    }
    const names = async (filter: Parameters<typeof listPublishedTemplates>[1]) =>
      (await listPublishedTemplates(store.db, filter, null, 10)).map((t) => t.name);
    expect(await names({})).toEqual(['a-shell', 'b-notebook', 'c-llm']);
    expect(await names({ kind: 'model' })).toEqual(['c-llm']);
    expect(await names({ kind: 'custom' })).toEqual(['b-notebook']);
    expect(await names({ backend: 'rocm' })).toEqual(['b-notebook', 'c-llm']);
    expect(await names({ backend: 'metal' })).toEqual([]);
    expect(await names({ maxMinVramBytes: 8n * GIB })).toEqual(['a-shell', 'b-notebook']);
    expect(await names({ maxMinVramBytes: 8n * GIB - 1n })).toEqual(['a-shell']);
    expect(await names({ maxMinVramBytes: 9_223_372_036_854_775_807n, backend: 'cuda', kind: 'model' })).toEqual(['c-llm']);

    const page1 = await listPublishedTemplates(store.db, {}, null, 2);
    expect(page1.map((t) => t.name)).toEqual(['a-shell', 'b-notebook']);
    const last = page1[1];
    const page2 = await listPublishedTemplates(store.db, {}, [last?.name as string, last?.id as string], 2);
    expect(page2.map((t) => t.name)).toEqual(['c-llm']);
    expect(page2[0]?.runtimes.map((r) => r.backend)).toEqual(['cuda', 'rocm']);

    expect(await findPublishedTemplate(store.db, ids['d-unqualified'] as string)).toBeNull();
    expect(await findTemplate(store.db, ids['d-unqualified'] as string)).not.toBeNull();
    expect(await isTemplatePublished(store.db, ids['c-llm'] as string)).toBe(true);
    expect(await isTemplateQualifiedOn(store.db, ids['c-llm'] as string, machine)).toBe(true);
    expect(await isTemplateQualifiedOn(store.db, ids['c-llm'] as string, randomUUID())).toBe(false);

    // Only admitted machines publish: blocking the host withdraws the templates, unblocking restores them.
    await setHostingBlocked(store.db, ownerAccountId, true, t1);
    expect(await names({})).toEqual([]);
    expect(await isTemplatePublished(store.db, ids['c-llm'] as string)).toBe(false);
    const other = await seedMachine(store.db, [80n * GIB]);
    await recordAgentQualification(store.db, {
      templateId: ids['c-llm'] as string,
      machineId: other.id,
      now: t1,
      detail: { imageDigest: digest('e'), deviceVramBytes: [80n * GIB] },
    });
    expect(await names({})).toEqual(['c-llm']);
    await setHostingBlocked(store.db, ownerAccountId, false, t1);
    expect(await names({})).toEqual(['a-shell', 'b-notebook', 'c-llm']);
  });

  it('a qualification for a machine that does not exist publishes nothing', async () => {
    const [imported] = (await importTemplates(store.db, valid([doc('ghost')]), t0)).templates;
    const templateId = imported?.templateId as string;
    const proof = await recordAgentQualification(store.db, {
      templateId,
      machineId: randomUUID(),
      now: t1,
      detail: { imageDigest: digest('a'), deviceVramBytes: [] },
    });
    expect(proof.recorded).toBe(true);
    expect(await isTemplatePublished(store.db, templateId)).toBe(false);
    expect(await listPublishedTemplates(store.db, {}, null, 10)).toEqual([]);
  });

  it('records an agent proof only when the digest is the template’s and the VRAM fits', async () => {
    const [imported] = (
      await importTemplates(
        store.db,
        valid([
          doc('llm', { vram_fit: { min_vram_bytes: (16n * GIB).toString() }, runtimes: [{ backend: 'cuda', image_digest: digest('e') }] }),
        ]),
        t0,
      )
    ).templates;
    const templateId = imported?.templateId as string;
    const { id: machineId } = await seedMachine(store.db);
    const attempt = (detail: Parameters<typeof recordAgentQualification>[1]['detail'], id = templateId) =>
      recordAgentQualification(store.db, { templateId: id, machineId, now: t1, detail });

    expect(await attempt({ imageDigest: digest('e'), deviceVramBytes: [24n * GIB] }, randomUUID())).toEqual({
      recorded: false,
      reason: 'template_not_found',
    });
    expect(await attempt({ imageDigest: digest('f'), deviceVramBytes: [24n * GIB] })).toEqual({
      recorded: false,
      reason: 'image_not_in_template',
    });
    expect(await attempt({ imageDigest: digest('e'), deviceVramBytes: [24n * GIB, 12n * GIB] })).toEqual({
      recorded: false,
      reason: 'vram_does_not_fit',
    });
    expect(await attempt({ imageDigest: digest('e'), deviceVramBytes: [] })).toEqual({ recorded: false, reason: 'vram_does_not_fit' });
    expect(await isTemplatePublished(store.db, templateId)).toBe(false);

    const ok = await attempt({
      imageDigest: digest('e'),
      deviceVramBytes: [16n * GIB, 24n * GIB],
      jobId: 'job-1',
      evidence: { health: true },
    });
    expect(ok).toEqual({ recorded: true, qualification: { templateId, machineId, source: 'agent', qualifiedAt: t1.toISOString() } });
    expect(await isTemplatePublished(store.db, templateId)).toBe(true);
    // A repeat proof refreshes the one record.
    const later = new Date(t1.getTime() + 60_000);
    await recordAgentQualification(store.db, {
      templateId,
      machineId,
      now: later,
      detail: { imageDigest: digest('e'), deviceVramBytes: [16n * GIB] },
    });
    const rows = await store.db.selectFrom('template_qualifications').selectAll().where('template_id', '=', templateId).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ machine_id: machineId, source: 'agent', qualified_at: later.toISOString() });
    expect(JSON.parse(rows[0]?.detail as string)).toEqual({
      image_digest: digest('e'),
      backend: 'cuda',
      device_vram_bytes: [(16n * GIB).toString()],
    });
  });

  it('computes offer fits from a published template only', async () => {
    const [imported] = (await importTemplates(store.db, valid([doc('fit', { vram_fit: { min_vram_bytes: (24n * GIB).toString() } })]), t0))
      .templates;
    const templateId = imported?.templateId as string;
    const big = await seedMachine(store.db, [80n * GIB, 40n * GIB]);
    const cpuOnly = await seedMachine(store.db, []);
    expect(await fitForMachine(store.db, templateId, big.id)).toBeNull();
    expect(await codeOf(templateFitCalculator(store.db, templateId))).toBe('TEMPLATE_NOT_FOUND');
    await recordAdminQualification(store.db, {
      templateId,
      machineId: big.id,
      now: t1,
      actorAccountId: null,
      reason: 'r',
      via: 'cli',
    });
    expect(await fitForMachine(store.db, templateId, big.id)).toEqual({
      template_id: templateId,
      fits: true,
      min_vram_bytes: (24n * GIB).toString(),
      device_vram_bytes: (40n * GIB).toString(),
      device_count: 2,
      headroom_bytes: (16n * GIB).toString(),
      shortfall_bytes: '0',
    });
    expect(await fitForMachine(store.db, templateId, cpuOnly.id)).toMatchObject({ fits: false, device_count: 0, device_vram_bytes: null });
    expect(await fitForMachine(store.db, templateId, randomUUID())).toBeNull();
    const fitOf = await templateFitCalculator(store.db, templateId);
    expect(fitOf([16n * GIB])).toMatchObject({ fits: false, shortfall_bytes: (8n * GIB).toString() });
    expect(fitOf([])).toMatchObject({ fits: false, device_count: 0, device_vram_bytes: null });
  });
});
