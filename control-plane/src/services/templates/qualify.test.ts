import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { DomainError } from '../../errors.js';
import { createTestApp, seedAccount, type TestApp } from '../../testing/app.js';
import { enrollDirect } from '../../testing/hosting.js';
import { DIALECTS } from '../../testing/stores.js';

const digest = (c: string) => `registry.test/ark/${c}@sha256:${c.repeat(64).slice(0, 64)}`;

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
  return 'resolved';
}

describe.each(DIALECTS)('qualifying a template by hand, on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('records an admin qualification with an audit entry; unknown templates are refused', async () => {
    const templates = t.ctx.services.templates;
    const [imported] = (
      await templates.importCatalog([
        {
          kind: 'classical',
          name: 'admin-made',
          description: 'admin-made template',
          vram_fit: { min_vram_bytes: '0' },
          runtimes: [{ backend: 'cuda', image_digest: digest('a') }],
          spec: { ports: [{ container_port: 8080, protocol: 'http' }], environment: { A: '1' } },
        },
      ])
    ).templates;
    const templateId = imported?.templateId as string;
    const machineId = await enrollDirect(t.app, await seedAccount(t.ctx, { role: 'host' }));
    const actor = randomUUID();
    await t.clock.advance(3_600_000);
    const at = t.clock.now();
    const q = await templates.qualify({ templateId, machineId, actorAccountId: actor, reason: 'verified by hand', via: 'api' });
    expect(q).toEqual({ qualification: { templateId, machineId, source: 'admin', qualifiedAt: at.toISOString() }, published: true });
    const audit = await t.store.db.selectFrom('audit_log').selectAll().where('subject', '=', templateId).execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: 'template.qualify', actor_account_id: actor, at: at.toISOString() });
    expect(JSON.parse(audit[0]?.detail as string)).toEqual({ machine_id: machineId, reason: 'verified by hand', via: 'api' });
    expect(await codeOf(templates.qualify({ templateId: randomUUID(), machineId, actorAccountId: actor, reason: 'x', via: 'api' }))).toBe(
      'TEMPLATE_NOT_FOUND',
    );
    expect(await codeOf(templates.qualify({ templateId, machineId: randomUUID(), actorAccountId: actor, reason: 'x', via: 'api' }))).toBe(
      'NOT_FOUND',
    );
    expect(await t.store.db.selectFrom('template_qualifications').selectAll().where('template_id', '=', templateId).execute()).toHaveLength(
      1,
    );
  });
});
