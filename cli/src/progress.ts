import type { SingleBar } from 'cli-progress';

// Long work (a job's image pull and start) shows a live bar on a terminal (cli-progress) and one plain line per
// step otherwise, on stderr either way so stdout keeps the result.

export interface JobProgress {
  /** A job event (pull progress, state change, log line). */
  event(event: { kind: string; message: string; data: Record<string, unknown> }): void;
  state(state: string): void;
  stop(): void;
}

export async function jobProgress(stream: NodeJS.WriteStream & { isTTY?: boolean }, enabled: boolean): Promise<JobProgress> {
  if (!enabled) return { event() {}, state() {}, stop() {} };
  if (stream.isTTY !== true) {
    let lastState = '';
    return {
      event: (event) => stream.write(`${event.kind}: ${event.message}\n`),
      state: (state) => {
        if (state !== lastState) stream.write(`state: ${state}\n`);
        lastState = state;
      },
      stop() {},
    };
  }
  const { MultiBar, Presets } = await import('cli-progress');
  const bars = new MultiBar(
    { stream, format: '{step} [{bar}] {percentage}% | {state} | {message}', hideCursor: true, clearOnComplete: false, autopadding: true },
    Presets.shades_classic,
  );
  const bar: SingleBar = bars.create(100, 0, { step: 'pull ', state: 'RESERVED', message: 'waiting for the machine' });
  let state = 'RESERVED';
  return {
    event(event) {
      const pct = event.data.progress_pct;
      if (event.kind === 'pull_progress' && typeof pct === 'number') bar.update(pct, { message: event.message });
      else bar.update({ message: event.message.slice(0, 60) });
    },
    state(next) {
      state = next;
      if (state === 'STARTING' || state === 'RUNNING') bar.update(100, { step: state === 'RUNNING' ? 'ready' : 'start', state });
      else bar.update({ state });
    },
    stop() {
      bar.update({ state });
      bars.stop();
    },
  };
}
