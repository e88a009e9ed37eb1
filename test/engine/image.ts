// The test engine's image: Node (this machine's binary and the shared libraries it loads) and test/engine/server.mjs
// on the busybox rootfs, `docker import`ed into a private dockerd and pushed to its loopback registry, so the agent
// pulls it by digest like any job image. Runs with host networking: the engine listens on 127.0.0.1:<port>.
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { DockerDaemon } from '../harness/dockerd.js';
import { buildTestImage, type TestImage, type TestRegistry } from '../harness/images.js';
import { runCommand } from '../harness/processes.js';

export const ENGINE_MODEL = 'ark-test-tiny';
const SERVER_PATH = fileURLToPath(new URL('./server.mjs', import.meta.url));

/** The shared libraries `ldd` lists for a binary, as absolute paths (the dynamic loader included). */
export async function sharedLibraries(binary: string): Promise<string[]> {
  const { stdout } = await runCommand('ldd', [binary]);
  const paths: string[] = [];
  for (const line of stdout.split('\n')) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (match?.[1] !== undefined) paths.push(match[1]);
  }
  return paths;
}

export async function buildEngineImage(daemon: DockerDaemon, registry?: TestRegistry): Promise<TestImage> {
  const node = realpathSync(process.execPath);
  const copies: Record<string, string> = { '/usr/local/bin/node': node };
  // Each library at the path the binary names it by, its content from wherever that link points.
  for (const library of await sharedLibraries(node)) copies[library] = realpathSync(library);
  return buildTestImage(daemon, {
    repository: 'ark-test/engine',
    ...(registry === undefined ? {} : { registry }),
    copies,
    files: { '/engine/server.mjs': await readFile(SERVER_PATH, 'utf8') },
    changes: ['CMD ["/usr/local/bin/node", "/engine/server.mjs"]', 'ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'WORKDIR /'],
  });
}

/** A model-kind template running the test engine on `port` (host networking: the container's port is the host's). */
export function engineTemplate(image: TestImage, port: number, name: string, tokenDelayMs = 40) {
  return {
    kind: 'model',
    name,
    description: 'A deterministic OpenAI-compatible engine for tests.',
    vram_fit: { min_vram_bytes: '0' },
    runtimes: [{ backend: 'cuda', image_digest: image.digestRef }],
    spec: {
      ports: [{ container_port: port, protocol: 'http', name: 'api' }],
      environment: { ENGINE_PORT: String(port), ENGINE_MODEL: ENGINE_MODEL, ENGINE_TOKEN_DELAY_MS: String(tokenDelayMs) },
      health_check: { port, path: '/health' },
      engine: { name: 'openai-compatible', model: ENGINE_MODEL, api_port: port },
    },
  };
}
