// Model jobs over real parts, for the relay's end-to-end test and benchmark: the test engine's image (test/engine)
// in the rental world's registry, a model-kind template imported with `ark-cp templates import` and qualified for
// the site's machine, then quote (naming the template), reserve and RUNNING on the paired agent.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEngineImage, engineTemplate } from '../engine/image.js';
import type { TestImage } from '../harness/images.js';
import { freePort } from '../harness/processes.js';
import { afterAll, beforeAll } from 'vitest';
import { type DockerWorld, type RentalSite, startDockerWorld } from './rental-helpers.js';

export { ENGINE_MODEL } from '../engine/image.js';

/** The engine image, pushed to the world's registry. */
export function engineImageIn(world: DockerWorld): Promise<TestImage> {
  return buildEngineImage(world.daemon, world.image.registry);
}

/**
 * For a describe block: the private dockerd with its registry and the engine image in it, started before its tests
 * and stopped after them. Read `world` and `engine` inside hooks and tests (they are set once started).
 */
export function withEngineWorld(): { readonly world: DockerWorld; readonly engine: TestImage } {
  const held = {} as { world: DockerWorld; engine: TestImage };
  beforeAll(async () => {
    held.world = await startDockerWorld();
    held.engine = await engineImageIn(held.world);
  }, 240_000);
  afterAll(async () => {
    await held.world?.stop();
  }, 60_000);
  return held;
}

/** What the test engine answers for a prompt: each word in turn, numbered (test/engine/server.mjs). */
export function expectedText(prompt: string, tokens: number): string {
  const words = prompt.split(/\s+/).filter((w) => w !== '');
  return Array.from({ length: tokens }, (_, i) => `${i === 0 ? '' : ' '}${words[i % words.length]}-${i}`).join('');
}

export interface ModelJob {
  jobId: string;
  templateId: string;
  /** The engine's port on this machine (host networking). */
  enginePort: number;
  /** The access answer while RUNNING (api_key included). */
  access: any;
  /** The OpenAI client's base URL for the relay of this job. */
  relayBase: string;
}

/** Imports a model template on `engine`, qualifies the site's machine, quotes it, reserves and waits for RUNNING. */
export async function startModelJob(site: RentalSite, engine: TestImage, options: { tokenDelayMs?: number } = {}): Promise<ModelJob> {
  const enginePort = await freePort();
  const directory = await mkdtemp(join(tmpdir(), 'ark-templates-'));
  let templateId: string;
  try {
    const file = join(directory, 'templates.json');
    await writeFile(
      file,
      JSON.stringify([engineTemplate(engine, enginePort, `relay-test-${randomUUID().slice(0, 8)}`, options.tokenDelayMs)]),
    );
    const imported = await site.cli(['templates', 'import', '--file', file]);
    templateId = imported.items?.[0]?.template_id ?? imported.templates?.[0]?.template_id;
    if (typeof templateId !== 'string') throw new Error(`templates import answered no id: ${JSON.stringify(imported)}`);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
  await site.cli(['templates', 'qualify', '--template', templateId, '--machine', site.machineId, '--reason', 'relay e2e']);
  const quoted = await site.renter('POST', '/api/v1/quotes', {
    offer_id: site.offerId,
    gpu_count: 1,
    duration_limit_s: 600,
    budget_micro: '20000000',
    template_id: templateId,
  });
  if (quoted.status !== 201) throw new Error(`quote: ${quoted.status} ${JSON.stringify(quoted.body)}`);
  const reserved = await site.renter('POST', '/api/v1/jobs', { quote_id: quoted.body.quote_id, ssh_public_keys: [site.ssh.publicKey] });
  if (reserved.status !== 202) throw new Error(`reserve: ${reserved.status} ${JSON.stringify(reserved.body)}`);
  const jobId = reserved.body.job_id as string;
  await site.waitState(jobId, 'RUNNING', 90_000);
  const access = await site.renter('GET', `/api/v1/jobs/${jobId}/access`);
  if (access.status !== 200) throw new Error(`access: ${access.status} ${JSON.stringify(access.body)}`);
  return { jobId, templateId, enginePort, access: access.body, relayBase: `${site.cp.base}/api/v1/jobs/${jobId}/openai/v1` };
}
