// `ark images resolve`: pinning a tag to its digest, as a renter does before renting, against real registries on
// loopback: Debian's docker-registry (distribution 2.8) holding a manifest pushed over its own HTTP API, and a
// registry that asks for an anonymous bearer token first (the flow of Docker Hub and GHCR), served here.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRegistry, type TestRegistry } from '../harness/images.js';
import { ark, arkConfigDir, expectExit } from './cli-helpers.js';

const sha256 = (bytes: Buffer | string) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** Pushes a config blob and a schema-2 manifest naming it, by the registry's HTTP API; answers the manifest's digest. */
async function pushManifest(registry: TestRegistry, repository: string, tag: string): Promise<string> {
  const base = `http://${registry.address}/v2/${repository}`;
  const config = Buffer.from(
    JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] }, nonce: randomBytes(8).toString('hex') }),
  );
  const start = await fetch(`${base}/blobs/uploads/`, { method: 'POST' });
  expect(start.status).toBe(202);
  const location = new URL(start.headers.get('location') as string, `http://${registry.address}`);
  location.searchParams.set('digest', sha256(config));
  const put = await fetch(location, { method: 'PUT', body: config, headers: { 'content-type': 'application/octet-stream' } });
  expect(put.status).toBe(201);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha256(config) },
      layers: [],
    }),
  );
  const pushed = await fetch(`${base}/manifests/${tag}`, {
    method: 'PUT',
    body: manifest,
    headers: { 'content-type': 'application/vnd.docker.distribution.manifest.v2+json' },
  });
  expect(pushed.status, await pushed.text()).toBe(201);
  return sha256(manifest);
}

describe('ark images resolve', () => {
  let registry: TestRegistry;
  let tokenRegistry: Server;
  let tokenBase: string;
  const tokenRequests: string[] = [];
  const env = { ARK_CONFIG_DIR: arkConfigDir() };
  const protectedDigest = sha256('a manifest behind a token');

  beforeAll(async () => {
    registry = await startRegistry();
    // A registry that answers 401 with a Bearer challenge until a token from its realm is presented.
    tokenRegistry = createServer((request, response) => {
      const url = new URL(request.url ?? '/', tokenBase);
      if (url.pathname === '/token') {
        tokenRequests.push(url.search);
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ token: 'anonymous-pull-token' }));
        return;
      }
      if (url.pathname === '/v2/org/app/manifests/1.2') {
        if (request.headers.authorization !== 'Bearer anonymous-pull-token') {
          response.statusCode = 401;
          response.setHeader(
            'www-authenticate',
            `Bearer realm="${tokenBase}/token",service="test-registry",scope="repository:org/app:pull"`,
          );
          response.end();
          return;
        }
        response.setHeader('docker-content-digest', protectedDigest);
        response.setHeader('content-type', 'application/vnd.oci.image.index.v1+json');
        response.end();
        return;
      }
      response.statusCode = 404;
      response.end();
    });
    await new Promise<void>((resolve) => tokenRegistry.listen(0, '127.0.0.1', resolve));
    tokenBase = `http://127.0.0.1:${(tokenRegistry.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await registry?.stop();
    await new Promise<void>((resolve) => (tokenRegistry ? tokenRegistry.close(() => resolve()) : resolve()));
  });

  it('prints the reference pinned by the digest the registry serves for the tag', async () => {
    const digest = await pushManifest(registry, 'team/trainer', 'v3');
    const human = expectExit(await ark(['images', 'resolve', `${registry.address}/team/trainer:v3`], { env }), 0);
    expect(human.stdout.trim()).toBe(`${registry.address}/team/trainer@${digest}`);
    const json = expectExit(await ark(['images', 'resolve', `${registry.address}/team/trainer:v3`, '--json'], { env }), 0);
    expect(json.json).toMatchObject({
      digest,
      pinned: `${registry.address}/team/trainer@${digest}`,
      image: { repository: 'team/trainer', reference: 'v3' },
    });
  });

  it('takes an anonymous token when the registry asks for one', async () => {
    const host = tokenBase.replace('http://', '');
    const run = expectExit(await ark(['images', 'resolve', `${host}/org/app:1.2`, '--json'], { env }), 0);
    expect(run.json).toMatchObject({ digest: protectedDigest, pinned: `${host}/org/app@${protectedDigest}` });
    expect(tokenRequests.at(-1)).toBe('?service=test-registry&scope=repository%3Aorg%2Fapp%3Apull');
  });

  it('says what is wrong: an unknown tag exits 4, a malformed reference exits 2', async () => {
    const missing = await ark(['images', 'resolve', `${registry.address}/team/trainer:nope`, '--json'], { env });
    expect(missing.code).toBe(4);
    expect(missing.json.error).toMatchObject({ code: 'REGISTRY', status: 404 });
    const malformed = await ark(['images', 'resolve', 'Not A Reference', '--json'], { env });
    expect(malformed.code).toBe(2);
    expect(malformed.json.error.message).toContain('is not a repository name');
  });
});
