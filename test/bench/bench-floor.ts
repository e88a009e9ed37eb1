// The floor under the agents bench's "server CPU per frame": what reading one WebSocket frame and writing one ack
// costs on this machine with nothing else done (no JSON, no MAC, no handler, no store), measured in the same run as
// the control plane's figure. The bare ws server (raw-socket-server.ts, the memory baseline's) answers every message
// with an ack-sized frame while the bench drives its sockets at the level's frame rate and mix, so the control
// plane's CPU per frame is read against it: the system calls and Node's stream machinery under it cost two to three
// times more on one VM than on another (a heartbeat cost 93 us on one session's machine and 213 us on a later one's,
// the same code), and the floor moves with them.
import type WebSocket from 'ws';

/** Fake MAC fields: base64 of the length a real HMAC-SHA256 has. */
const MAC_Y = `${'y'.repeat(43)}=`;
const MAC_Z = `${'z'.repeat(43)}=`;

/** An ack as the gateway writes it under a MAC: about the same bytes on the wire. */
export const FLOOR_ACK = JSON.stringify({ p: JSON.stringify({ v: 1, t: 'ack', sid: 'x'.repeat(22), seq: 12_345, upto: 100 }), m: MAC_Y });

/** A heartbeat and a telemetry batch (the given samples) as an agent sends them under a MAC: the floor's frames. */
export function floorFrames(telemetrySamples: unknown[]): { heartbeat: string; telemetry: string } {
  const frame = (payload: Record<string, unknown>) =>
    JSON.stringify({ p: JSON.stringify({ v: 1, sid: 'x'.repeat(22), seq: 5, ...payload }), m: MAC_Z });
  return {
    heartbeat: frame({ t: 'heartbeat', at: new Date(0).toISOString(), uptime_s: 86_400, healthy: true, problems: [], running_jobs: [] }),
    telemetry: frame({ t: 'telemetry', id: 7, samples: telemetrySamples }),
  };
}

/** What the bench's sockets send during the floor's hold. */
export interface FloorLoad {
  /** Frames a second over all sockets. */
  framesPerS: number;
  /** The share of them that are telemetry-sized (telemetry batches and meter receipts); the rest are heartbeats. */
  largeShare: number;
  heartbeat: string;
  telemetry: string;
}

/**
 * Sends on `sockets` (open to a bare server that is echoing) at `load`'s rate, each socket at its own random phase so
 * the rate is steady from the start. `count()` answers how many acks came back since it was last called; `stop()`
 * ends the sending.
 */
export function driveFloor(sockets: readonly WebSocket[], load: FloorLoad): { count(): number; stop(): void } {
  const intervalMs = (1000 * sockets.length) / Math.max(1, load.framesPerS);
  let acks = 0;
  const timers: NodeJS.Timeout[] = [];
  const onAck = () => {
    acks += 1;
  };
  sockets.forEach((ws, index) => {
    ws.on('message', onAck);
    const tick = () => {
      if (ws.readyState === ws.OPEN) ws.send(Math.random() < load.largeShare ? load.telemetry : load.heartbeat);
      timers[index] = setTimeout(tick, intervalMs);
    };
    timers[index] = setTimeout(tick, Math.random() * intervalMs);
  });
  return {
    count: () => {
      const seen = acks;
      acks = 0;
      return seen;
    },
    stop: () => {
      for (const timer of timers) clearTimeout(timer);
      for (const ws of sockets) ws.off('message', onAck);
    },
  };
}
