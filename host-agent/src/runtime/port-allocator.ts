// Host ports for jobs come from one configured range. A port is handed out only if no persisted job
// holds it and a probe listener can bind it right now.
import { createServer } from 'node:net';

export type PortRange = { first: number; last: number };

export class PortRangeExhaustedError extends Error {
  constructor(range: PortRange, wanted: number) {
    super(`no ${wanted} free port(s) left in ${range.first}-${range.last}`);
    this.name = 'PortRangeExhaustedError';
  }
}

export function parsePortRange(text: string): PortRange {
  const match = /^(\d{1,5})-(\d{1,5})$/.exec(text.trim());
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (match === null || first < 1 || last > 65535 || first > last) throw new Error(`invalid port range ${JSON.stringify(text)}`);
  return { first, last };
}

/** Whether a TCP listener can bind host:port now (closed again at once). */
export function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export type PortAllocatorOptions = {
  range: PortRange;
  /** Addresses a port must be free on (the SSH bind address, the publish address). */
  probeHosts: readonly string[];
};

export class PortAllocator {
  private readonly range: PortRange;
  private readonly probeHosts: readonly string[];
  // Rotates the starting point so a port given back is not handed out again at once.
  private cursor = 0;

  constructor(options: PortAllocatorOptions) {
    if (options.range.first < 1 || options.range.last > 65535 || options.range.first > options.range.last) {
      throw new Error(`invalid port range ${options.range.first}-${options.range.last}`);
    }
    this.range = options.range;
    this.probeHosts = options.probeHosts.length > 0 ? options.probeHosts : ['0.0.0.0'];
  }

  /** `count` distinct free ports not in `taken`; each range port is probed at most once per call. */
  async allocate(count: number, taken: ReadonlySet<number>): Promise<number[]> {
    const size = this.range.last - this.range.first + 1;
    const chosen: number[] = [];
    for (let step = 0; step < size && chosen.length < count; step += 1) {
      const port = this.range.first + ((this.cursor + step) % size);
      if (taken.has(port) || chosen.includes(port)) continue;
      if (await this.isFree(port)) chosen.push(port);
    }
    if (chosen.length < count) throw new PortRangeExhaustedError(this.range, count);
    const last = chosen[chosen.length - 1] ?? this.range.first;
    this.cursor = (last - this.range.first + 1) % size;
    return chosen;
  }

  private async isFree(port: number): Promise<boolean> {
    for (const host of this.probeHosts) {
      if (!(await canBind(port, host))) return false;
    }
    return true;
  }
}
