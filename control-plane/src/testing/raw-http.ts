import { connect, type Socket } from 'node:net';

// Raw HTTP/1.1 over node:net, for what no HTTP client will send: malformed framing, oversized headers, bodies
// trickled a byte at a time. Answers are read until the server closes the connection (or a deadline passes).

export interface RawAnswer {
  /** 0 when nothing came back before the connection closed. */
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (rather than the deadline passing). */
  closed: boolean;
  /** From the first byte sent to the connection's close (or the deadline). */
  elapsedMs: number;
}

export function parseAnswer(text: string): Pick<RawAnswer, 'status' | 'headers' | 'body'> {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: text };
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body: text.slice(end + 4) };
}

/** Opens a connection and waits until it is established. */
export function openSocket(port: number, host = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends on `socket` until it closes it, or `deadlineMs` passes. */
export function readUntilClosed(socket: Socket, deadlineMs: number, startedAt = Date.now()): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...parseAnswer(Buffer.concat(chunks).toString('utf8')), closed, elapsedMs: Date.now() - startedAt });
    };
    const timer = setTimeout(() => finish(false), deadlineMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
}

/** Sends `bytes` on a new connection and reads the answer until the server closes it. */
export async function sendRaw(port: number, bytes: string | Buffer, deadlineMs = 5000): Promise<RawAnswer> {
  const socket = await openSocket(port);
  const startedAt = Date.now();
  const answer = readUntilClosed(socket, deadlineMs, startedAt);
  socket.write(bytes);
  return answer;
}

/**
 * Sends `head` at once, then `trickle` one byte every `intervalMs` while the connection stays open: a slowloris.
 * Resolves with what the server answered once it closes the connection, or at the deadline.
 */
export async function trickle(port: number, head: string, trickleText: string, intervalMs: number, deadlineMs: number): Promise<RawAnswer> {
  const socket = await openSocket(port);
  const startedAt = Date.now();
  const answer = readUntilClosed(socket, deadlineMs, startedAt);
  socket.write(head);
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= trickleText.length) return clearInterval(timer);
    socket.write(trickleText[i++] ?? '');
  }, intervalMs);
  const result = await answer;
  clearInterval(timer);
  return result;
}
