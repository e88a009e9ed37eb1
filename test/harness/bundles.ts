// The compiled entry points the suites start as processes: `ark-cp` and `ark` from scripts/bundle.mjs, the agent
// from host-agent/scripts/bundle.mjs. test/harness/global-setup.ts builds whichever is stale once, before any
// suite runs, so every spawned control plane, CLI and agent runs the sources as they are now, on plain Node, without
// tsx's loader (a control plane starts on about a third of the CPU).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `node <this> serve` is `ark-cp serve`. */
export const controlPlaneBundle = join(repoRoot, 'control-plane', 'dist', 'main.mjs');
/** `node <this> whoami` is `ark whoami`. */
export const arkBundle = join(repoRoot, 'cli', 'dist', 'main.mjs');
