// The baseline of agents.bench.ts's "memory beyond the raw socket": a bare ws server holding sockets with the
// gateway's ws options, in a child process of its own that loads nothing of the control plane, so its start-up leaves
// little garbage to swing its readings. Talks to the bench over IPC as agents-server.ts does: {type:'ready', port},
// and {type:'gc'} answered with its settled memory (bench-memory.ts). It is also the floor under the bench's CPU per
// frame (bench-floor.ts): after {type:'echo', on:true} (answered {type:'echoing'}) it answers every message with an
// ack-sized frame, and nothing else.
import { createServer } from 'node:http';
import { CHANNEL_MAX_FRAME_BYTES } from '@ark/shared';
import { type WebSocket, WebSocketServer } from 'ws';
import { FLOOR_ACK } from './bench-floor.js';
import { answerMemoryRequests } from './bench-memory.js';

async function serveRaw(): Promise<void> {
  const sockets = new Set<WebSocket>();
  let echoing = false;
  const wss = new WebSocketServer({ noServer: true, maxPayload: CHANNEL_MAX_FRAME_BYTES, perMessageDeflate: false, clientTracking: false });
  const server = createServer((_request, response) => response.writeHead(404).end());
  server.on('upgrade', (request, socket, head) => {
    wss.handleUpgrade(request, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('message', () => {
        if (echoing) ws.send(FLOOR_ACK);
      });
      ws.on('close', () => sockets.delete(ws));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  answerMemoryRequests();
  process.on('message', (message: { type?: string; on?: boolean }) => {
    if (message?.type !== 'echo') return;
    echoing = message.on === true;
    process.send?.({ type: 'echoing', on: echoing });
  });
  process.send?.({ type: 'ready', port: (server.address() as { port: number }).port });
  process.once('SIGTERM', () => {
    for (const ws of sockets) ws.terminate();
    server.close(() => process.exit(0));
  });
}

serveRaw().catch((error: unknown) => {
  process.stderr.write(`raw-socket-server: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
