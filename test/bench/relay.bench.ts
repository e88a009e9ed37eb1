// The OpenAI-compatible relay's cost, in one run: a real `ark-cp serve` and a paired `ark-agent run` with a model job
// on the test engine (test/engine, in the private dockerd, host networking, no delay between tokens), asked the same
// streaming chat completion directly (with the job's api_key) and through the relay (the renter's key; the tunnel
// over the agent's signed channel), alternately. Figures, medians over the rounds:
// - firstByteMs: from sending the request to the first streamed token; addedFirstByteMs = relay - direct, and the
//   ratio relay / direct;
// - chunksPerSecond: server-sent events received per second over a 1024-token answer, from sending the request to the
//   stream's end, with an engine that writes its tokens as fast as it can (each its own write): the relay's capacity
//   against the engine's own; the ratio relay / direct.
// Budgets: the relay adds at most 50 ms to the first byte, and carries at least 1000 events a second on one stream
// (five times a fast engine's token rate; every piece is signed, sent over the channel and verified, so the relay
// is far below a bare loopback engine's own rate, which the ratio shows). Figures in test/bench/README.md.
// Run: pnpm exec tsx test/bench/relay.bench.ts [--rounds 20] [--dialect sqlite]
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type Dialect, RentalSite, startDockerWorld } from '../e2e/rental-helpers.js';
import { ENGINE_MODEL, engineImageIn, startModelJob } from '../e2e/relay-helpers.js';
import { isDockerAvailable } from '../harness/dockerd.js';

export interface RelayBenchOptions {
  /** Requests per path (default 20, at most 200). */
  rounds?: number;
  dialect?: Dialect;
  log?: (line: string) => void;
}

interface PathFigures {
  firstByteMedianMs: number;
  chunksPerSecondMedian: number;
}

export interface RelayBenchFigures {
  rounds: number;
  tokens: number;
  direct: PathFigures;
  relay: PathFigures;
  addedFirstByteMs: number;
  firstByteRatio: number;
  chunksPerSecondRatio: number;
  budgets: { addedFirstByteMsMax: number; relayChunksPerSecondMin: number };
  withinBudget: { firstByte: boolean; chunksPerSecond: boolean };
}

const TOKENS = 1024;

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
const round = (n: number, places = 2) => Math.round(n * 10 ** places) / 10 ** places;

/** One streamed chat completion: time to the first token, and events per second from sending to the end. */
async function streamOnce(url: string, key: string): Promise<{ firstByteMs: number; chunksPerSecond: number }> {
  const sent = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: ENGINE_MODEL,
      messages: [{ role: 'user', content: 'bench the relay' }],
      max_tokens: TOKENS,
      stream: true,
    }),
  });
  if (response.status !== 200 || response.body === null) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  const decoder = new TextDecoder();
  let first = 0;
  let events = 0;
  // Events end with a blank line; only the tail of the previous piece is kept, so counting stays linear.
  let tail = '';
  for await (const piece of response.body as unknown as AsyncIterable<Uint8Array>) {
    const now = performance.now();
    const text = tail + decoder.decode(piece, { stream: true });
    const count = text.split('\n\n').length - 1;
    if (count > 0 && events === 0) first = now;
    events += count;
    const end = text.lastIndexOf('\n\n');
    tail = end < 0 ? text : text.slice(end + 2);
  }
  const ended = performance.now();
  if (events < TOKENS + 2) throw new Error(`${url}: ${events} events, expected ${TOKENS + 2} (the role, each token, the end)`);
  return { firstByteMs: first - sent, chunksPerSecond: events / Math.max((ended - sent) / 1000, 0.001) };
}

export async function run(options: RelayBenchOptions = {}): Promise<RelayBenchFigures> {
  const rounds = Math.max(1, Math.min(options.rounds ?? 20, 200));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (!isDockerAvailable()) throw new Error('the relay bench needs the Docker harness (dockerd, docker-registry, busybox-static, root)');
  const world = await startDockerWorld();
  try {
    const engine = await engineImageIn(world);
    const site = await RentalSite.start(options.dialect ?? 'sqlite', world);
    try {
      const job = await startModelJob(site, engine, { tokenDelayMs: 0 });
      const endpoint = job.access.endpoints.find((e: { kind: string }) => e.kind === 'http');
      const direct = `http://${endpoint.external_host}:${endpoint.external_port}/v1/chat/completions`;
      const relay = `${job.relayBase}/chat/completions`;
      // Warm both paths (connections, JIT) before measuring.
      for (let i = 0; i < 3; i += 1) {
        await streamOnce(direct, job.access.api_key);
        await streamOnce(relay, site.renterKey);
      }
      type Sample = { firstByteMs: number; chunksPerSecond: number };
      const samples: { direct: Sample[]; relay: Sample[] } = { direct: [], relay: [] };
      for (let i = 0; i < rounds; i += 1) {
        samples.direct.push(await streamOnce(direct, job.access.api_key));
        samples.relay.push(await streamOnce(relay, site.renterKey));
      }
      const figures = (list: Sample[]): PathFigures => ({
        firstByteMedianMs: round(median(list.map((s) => s.firstByteMs))),
        chunksPerSecondMedian: Math.round(median(list.map((s) => s.chunksPerSecond))),
      });
      const directFigures = figures(samples.direct);
      const relayFigures = figures(samples.relay);
      log(`relay: direct ${JSON.stringify(directFigures)}, relay ${JSON.stringify(relayFigures)}`);
      const budgets = { addedFirstByteMsMax: 50, relayChunksPerSecondMin: 1000 };
      const addedFirstByteMs = round(relayFigures.firstByteMedianMs - directFigures.firstByteMedianMs);
      const chunksPerSecondRatio = round(relayFigures.chunksPerSecondMedian / directFigures.chunksPerSecondMedian, 3);
      return {
        rounds,
        tokens: TOKENS,
        direct: directFigures,
        relay: relayFigures,
        addedFirstByteMs,
        firstByteRatio: round(relayFigures.firstByteMedianMs / directFigures.firstByteMedianMs),
        chunksPerSecondRatio,
        budgets,
        withinBudget: {
          firstByte: addedFirstByteMs <= budgets.addedFirstByteMsMax,
          chunksPerSecond: relayFigures.chunksPerSecondMedian >= budgets.relayChunksPerSecondMin,
        },
      };
    } finally {
      await site.stop();
    }
  } finally {
    await world.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, dialect: { type: 'string' } } });
  const figures = await run({
    rounds: values.rounds === undefined ? undefined : Number(values.rounds),
    dialect: values.dialect === undefined ? undefined : (values.dialect as Dialect),
  });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  process.exit(0);
}
