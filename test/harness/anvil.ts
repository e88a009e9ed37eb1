// A private anvil (from npm: @foundry-rs/anvil ships the binary in an optional platform package) on a free loopback
// port, started as Base (--chain-id 8453) with one slot per epoch, so a block is final two blocks later. Stopped by
// its own PID. The binary is run directly, not through the package's node wrapper, so the PID is anvil's.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, type SpawnedProcess, spawnProcess, waitFor } from './processes.js';

const require = createRequire(import.meta.url);

/** The anvil binary inside the platform package npm installed for this machine. */
export function anvilBinary(): string {
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  if (!arch || !['linux', 'darwin'].includes(process.platform))
    throw new Error(`anvil from npm has no binary for ${process.platform}-${process.arch}`);
  const wrapper = dirname(require.resolve('@foundry-rs/anvil/package.json'));
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const fromWrapper = createRequire(join(wrapper, 'package.json'));
  return join(dirname(fromWrapper.resolve(`${platformPackage}/package.json`)), 'bin', 'anvil');
}

export interface Anvil {
  url: string;
  port: number;
  process: SpawnedProcess;
  /** One JSON-RPC call (anvil_*, evm_* and eth_* alike); an error answer throws. */
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Mines `blocks` empty blocks. */
  mine(blocks?: number): Promise<void>;
  blockNumber(): Promise<bigint>;
  stop(): Promise<void>;
}

export interface AnvilOptions {
  /** A loopback port (a restarted node answering where the last one did); default: a free one. */
  port?: number;
  chainId?: number;
  slotsInAnEpoch?: number;
  /** Extra command-line arguments. */
  args?: string[];
}

/** The well-known first development account of anvil's default mnemonic (unlocked on the node). */
export const ANVIL_ACCOUNTS = [
  '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
] as const;

export async function startAnvil(options: AnvilOptions = {}): Promise<Anvil> {
  const port = options.port ?? (await freePort());
  const child = spawnProcess(
    anvilBinary(),
    [
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--chain-id',
      String(options.chainId ?? 8453),
      '--slots-in-an-epoch',
      String(options.slotsInAnEpoch ?? 1),
      // Enough accounts and balance for bursts; no disk state, no network.
      '--accounts',
      '3',
      '--balance',
      '1000000',
      ...(options.args ?? []),
    ],
    { exitSignal: 'SIGKILL', outputLimitBytes: 64 * 1024 },
  );
  const url = `http://127.0.0.1:${port}`;
  let id = 0;
  const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    });
    const body = (await response.json()) as { result?: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  const started = await waitFor(async () => (child.isRunning() ? (await rpc<string>('eth_chainId')) !== undefined : 'exited'), {
    timeoutMs: 30_000,
    intervalMs: 100,
    description: 'anvil to answer eth_chainId',
  }).catch((error: Error) => error);
  if (started !== true) {
    await child.stop('SIGKILL');
    const why = started instanceof Error ? started.message : 'anvil exited';
    throw new Error(`${why}\n--- anvil output ---\n${child.output()}`);
  }
  return {
    url,
    port,
    process: child,
    rpc,
    mine: async (blocks = 1) => {
      await rpc('anvil_mine', [`0x${blocks.toString(16)}`]);
    },
    blockNumber: async () => BigInt(await rpc<string>('eth_blockNumber')),
    stop: async () => {
      await child.stop('SIGTERM', { timeoutMs: 5_000 });
    },
  };
}

/** Multicall3's canonical address, where the control plane's holdings read calls it (ARK_MULTICALL_ADDRESS's default). */
export const MULTICALL3_ADDRESS = '0xcA11bde05977b3631167028862bE2a173976CA11';

let multicall3Code: `0x${string}` | undefined;

/** TestMulticall3's runtime code (test/fixtures/contracts/TestMulticall3.sol), compiled with solc from npm once per process. */
export function multicall3RuntimeCode(): `0x${string}` {
  if (multicall3Code) return multicall3Code;
  const solc = require('solc') as { compile(input: string): string };
  const file = 'TestMulticall3.sol';
  const content = readFileSync(fileURLToPath(new URL(`../fixtures/contracts/${file}`, import.meta.url)), 'utf8');
  const output = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { [file]: { content } },
        settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } } },
      }),
    ),
  ) as {
    errors?: Array<{ severity: string; formattedMessage: string }>;
    contracts: Record<string, Record<string, { evm: { deployedBytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc: ${errors.map((e) => e.formattedMessage).join('\n')}`);
  const code = output.contracts[file]?.TestMulticall3?.evm.deployedBytecode.object;
  if (!code) throw new Error('solc produced no TestMulticall3');
  multicall3Code = `0x${code}`;
  return multicall3Code;
}

/** Places Multicall3 (aggregate3, getEthBalance) at its canonical address on the node, as every public chain has it. */
export async function installMulticall3(anvil: Pick<Anvil, 'rpc'>): Promise<void> {
  await anvil.rpc('anvil_setCode', [MULTICALL3_ADDRESS, multicall3RuntimeCode()]);
}
