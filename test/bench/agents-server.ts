// The control-plane side of agents.bench.ts, run as a child process so its memory is measured alone: the real
// control-plane app (createRuntime + buildApp: store, gateway, every area's channel handlers) with a machine directory
// over keys the bench derived from a seed, so thousands of machines need no enrollment; the metered machines
// (test/bench/metered-jobs.ts) are real rows, found in the machines table. Its baseline for "memory beyond the raw
// socket" is raw-socket-server.ts. Talks to the bench over IPC: {type:'ready', port}, and on {type:'gc'} it collects
// garbage until its RSS settles and answers {type:'memory', ...process.memoryUsage()} (bench-memory.ts).
// First, as in `ark-cp serve` (control-plane/src/main.ts): the bench measures the server as it runs in production.
import '@ark/control-plane/startup/keep-tick-maps';
import { createHmac, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildApp } from '@ark/control-plane/app';
import { loadConfig } from '@ark/control-plane/config/index';
import { machinesTableDirectory } from '@ark/control-plane/gateway/directory';
import type { MachineDirectory } from '@ark/control-plane/gateway/handlers';
import { createRuntime } from '@ark/control-plane/runtime';
import { collectStartupGarbage } from '@ark/control-plane/startup/collect-garbage';
import { ed25519PrivateKeyFromSeed, ed25519PublicKeyToBase64, systemClock } from '@ark/shared';
import { answerMemoryRequests } from './bench-memory.js';

export interface BenchMachine {
  id: string;
  privateKey: KeyObject;
  publicKeyBase64: string;
}

/** Machine `index` of a bench run: its id carries the index, its key is derived from the run's seed. */
export function benchMachine(seed: Buffer, index: number): BenchMachine {
  const id = `${seed.toString('hex').slice(0, 8)}-0000-4000-8000-${index.toString(16).padStart(12, '0')}`;
  const privateKey = ed25519PrivateKeyFromSeed(createHmac('sha256', seed).update(`machine-${index}`).digest());
  return { id, privateKey, publicKeyBase64: ed25519PublicKeyToBase64(privateKey) };
}

/**
 * The bench's machine directory: public keys the bench process derived (it holds the private keys) and wrote to a
 * file, one base64 key per line, line i for machine i. A map lookup, like a cached machines-table read. An empty line
 * is a machine with a row (a metered one): `rows`, the real directory, answers for it.
 */
export function benchDirectory(seed: Buffer, keysFile: string, rows?: MachineDirectory): MachineDirectory {
  const prefix = `${seed.toString('hex').slice(0, 8)}-0000-4000-8000-`;
  const keys = readFileSync(keysFile, 'utf8').split('\n');
  return {
    async publicKeyOf(machineId) {
      if (!machineId.startsWith(prefix)) return null;
      const index = Number.parseInt(machineId.slice(prefix.length), 16);
      return keys[index] || (rows ? rows.publicKeyOf(machineId) : null);
    },
  };
}

/**
 * With ARK_BENCH_PROFILE_DIR set, {type:'profile', on:true|false} starts and stops a CPU profile of this process
 * (node:inspector), written there when stopped: the bench profiles the hold alone, not start-up and the ramp.
 */
function answerProfileRequests(): void {
  const dir = process.env.ARK_BENCH_PROFILE_DIR;
  if (!dir) return;
  const session = new Session();
  session.connect();
  process.on('message', (message: { type?: string; on?: boolean }) => {
    if (message?.type !== 'profile') return;
    if (message.on) {
      session.post('Profiler.enable', () => session.post('Profiler.start'));
      return;
    }
    session.post('Profiler.stop', (error, result) => {
      if (!error) writeFileSync(join(dir, `hold-${process.pid}-${Date.now()}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}

async function serveApp(): Promise<void> {
  const seed = Buffer.from(process.env.ARK_BENCH_SEED ?? '', 'hex');
  if (seed.length !== 32) throw new Error('ARK_BENCH_SEED must be 32 bytes of hex');
  const config = loadConfig(process.env);
  // Quiet on purpose: the bench reads the gateway's close counters from /metrics instead of its logs.
  const silent = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Parameters<typeof createRuntime>[1];
  const runtime = await createRuntime(config, silent, systemClock);
  const app = await buildApp({
    ...runtime,
    gateway: {
      directory: benchDirectory(seed, process.env.ARK_BENCH_KEYS_FILE ?? '', machinesTableDirectory(runtime.store)),
      maxConnections: 100_000,
    },
  });
  // As `ark-cp serve` does (control-plane/src/serve.ts): one full collection after start-up, before listening.
  await app.ready();
  collectStartupGarbage();
  await app.listen({ host: config.host, port: config.port });
  answerProfileRequests();
  answerMemoryRequests();
  process.send?.({ type: 'ready', port: (app.server.address() as { port: number }).port });
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => runtime.close())
      .finally(() => process.exit(0));
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  serveApp().catch((error: unknown) => {
    process.stderr.write(`agents-server: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
