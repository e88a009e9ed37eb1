// The floor under the agents bench's "server CPU per frame": a bare ws server in its own process that answers every
// message with one ack-sized frame, driven by the same number of sockets at the same frame rate as the bench's
// agents, with nothing else (no JSON, no MAC, no handler, no store). What it costs per frame is what reading one
// WebSocket frame and writing one costs on this machine (the system calls dominate on a VM), so the gateway's figure
// is read against it in the same run. Run alone: pnpm exec tsx test/bench/ws-echo.ts [sockets] [frames per second]
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';

/** An ack as the gateway writes it under a MAC: about the same bytes on the wire. */
const ACK = JSON.stringify({ p: JSON.stringify({ v: 1, t: 'ack', sid: 'x'.repeat(22), seq: 12_345, upto: 100 }), m: `${'y'.repeat(43)}=` });
/** A heartbeat as an agent sends it under a MAC. */
const HEARTBEAT = JSON.stringify({
  p: JSON.stringify({
    v: 1,
    t: 'heartbeat',
    sid: 'x'.repeat(22),
    seq: 5,
    at: new Date(0).toISOString(),
    uptime_s: 86_400,
    healthy: true,
    problems: [],
    running_jobs: [],
  }),
  m: `${'z'.repeat(43)}=`,
});

export interface EchoFigures {
  sockets: number;
  frames: number;
  cpuUsPerFrame: number | null;
  cpuPctOfCore: number;
}

function serve(): void {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, clientTracking: false });
  let frames = 0;
  let cpuAt = process.cpuUsage();
  let startedAt = performance.now();
  wss.on('connection', (ws) =>
    ws.on('message', () => {
      frames += 1;
      ws.send(ACK);
    }),
  );
  wss.on('listening', () => process.send?.({ type: 'ready', port: (wss.address() as { port: number }).port }));
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'start') {
      frames = 0;
      cpuAt = process.cpuUsage();
      startedAt = performance.now();
    } else if (message.type === 'stop') {
      const cpu = process.cpuUsage(cpuAt);
      process.send?.({ type: 'figures', frames, cpuUs: cpu.user + cpu.system, ms: performance.now() - startedAt });
    }
  });
}

function next<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve) => {
    const onMessage = (message: { type?: string }) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      resolve(message as T);
    };
    child.on('message', onMessage);
  });
}

/**
 * Holds `sockets` connections to a bare echo server for `holdS` seconds, sending `framesPerS` frames a second in all
 * (each socket at its own phase), and answers the server's CPU per frame.
 */
export async function measureWsEcho(options: { sockets: number; framesPerS: number; holdS: number }): Promise<EchoFigures> {
  const script = fileURLToPath(import.meta.url);
  const child = fork(script, ['serve'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const sockets: WebSocket[] = [];
  const timers: NodeJS.Timeout[] = [];
  try {
    const { port } = await next<{ port: number }>(child, 'ready');
    for (let i = 0; i < options.sockets; i += 64) {
      const batch = Array.from(
        { length: Math.min(64, options.sockets - i) },
        () =>
          new Promise<void>((resolve, reject) => {
            const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
            ws.once('open', () => {
              sockets.push(ws);
              resolve();
            });
            ws.once('error', reject);
            ws.on('message', () => {});
          }),
      );
      await Promise.all(batch);
    }
    const intervalMs = (1000 * options.sockets) / Math.max(1, options.framesPerS);
    sockets.forEach((ws, index) => {
      const tick = () => {
        ws.send(HEARTBEAT);
        timers[index] = setTimeout(tick, intervalMs);
      };
      timers[index] = setTimeout(tick, Math.random() * intervalMs);
    });
    // One interval to reach the steady rate, then the measured hold.
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, 15_000)));
    child.send({ type: 'start' });
    await new Promise((resolve) => setTimeout(resolve, options.holdS * 1000));
    const done = next<{ frames: number; cpuUs: number; ms: number }>(child, 'figures');
    child.send({ type: 'stop' });
    const { frames, cpuUs, ms } = await done;
    return {
      sockets: sockets.length,
      frames,
      cpuUsPerFrame: frames > 0 ? Math.round(cpuUs / frames) : null,
      cpuPctOfCore: Math.round((1000 * cpuUs) / 1000 / ms) / 10,
    };
  } finally {
    for (const timer of timers) clearTimeout(timer);
    for (const ws of sockets) ws.terminate();
    child.kill();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === 'serve') serve();
  else {
    const sockets = Number(process.argv[2] ?? 4000);
    const framesPerS = Number(process.argv[3] ?? (sockets * 5) / 60);
    measureWsEcho({ sockets, framesPerS, holdS: 15 }).then(
      (figures) => {
        process.stdout.write(`${JSON.stringify(figures)}\n`);
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`${String(error)}\n`);
        process.exit(1);
      },
    );
  }
}
