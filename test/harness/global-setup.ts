// vitest's globalSetup: builds the bundles the suites start as processes (test/harness/bundles.ts), once per run and
// only when a source changed since the last build (a content hash beside each bundle).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './bundles.js';

interface Bundler {
  ensureBundle(name: string): Promise<string>;
}
interface AgentBundler {
  BUNDLE_PATH: string;
  bundleIsFresh(path: string): boolean;
  bundleAgent(path: string): Promise<string>;
}

export default async function setup(): Promise<void> {
  const started = performance.now();
  const bundler = (await import(pathToFileURL(join(repoRoot, 'scripts', 'bundle.mjs')).href)) as Bundler;
  const agent = (await import(pathToFileURL(join(repoRoot, 'host-agent', 'scripts', 'bundle.mjs')).href)) as AgentBundler;
  await Promise.all([
    bundler.ensureBundle('control-plane'),
    bundler.ensureBundle('cli'),
    agent.bundleIsFresh(agent.BUNDLE_PATH) ? Promise.resolve(agent.BUNDLE_PATH) : agent.bundleAgent(agent.BUNDLE_PATH),
  ]);
  process.stdout.write(`[setup] bundles ready in ${Math.round(performance.now() - started)} ms\n`);
}
