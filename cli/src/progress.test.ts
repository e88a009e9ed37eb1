import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { jobProgress } from './progress.js';

// The job-start display: a cli-progress bar on a terminal, plain lines otherwise. The terminal is a narrow double
// (a stream that says it is a TTY and records what is drawn); the bar itself is cli-progress's.

class RecordingStream extends Writable {
  text = '';
  constructor(readonly isTTY: boolean) {
    super();
  }
  columns = 120;
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
  cursorTo(_x: number, _y?: number | (() => void), done?: () => void): boolean {
    if (typeof done === 'function') done();
    return true;
  }
  moveCursor(_dx: number, _dy: number, done?: () => void): boolean {
    done?.();
    return true;
  }
  clearLine(_dir: number, done?: () => void): boolean {
    done?.();
    return true;
  }
  clearScreenDown(done?: () => void): boolean {
    done?.();
    return true;
  }
}

const pull = (pct: number) => ({ kind: 'pull_progress', message: `pulling ${pct}%`, data: { progress_pct: pct } });
const ESC = String.fromCharCode(27);
/** The text drawn, without the terminal's control sequences. */
const plain = (text: string) => text.replace(new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, 'g'), '');

describe('job start progress', () => {
  it('draws a bar on a terminal: the pull percentage, then the state and ready', async () => {
    const tty = new RecordingStream(true);
    const progress = await jobProgress(tty as unknown as NodeJS.WriteStream, true);
    progress.event(pull(40));
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(plain(tty.text)).toMatch(/pull +\[█{16}░{24}\] +40% \| RESERVED \| pulling 40%/);
    progress.state('STARTING');
    progress.state('RUNNING');
    progress.stop();
    const drawn = plain(tty.text);
    expect(drawn).toMatch(/ready +\[█{40}\] +100% \| RUNNING/);
    // Nothing but the bar: no plain event lines on a terminal.
    expect(drawn).not.toContain('state: RUNNING');
  });

  it('writes one plain line per event and per state change elsewhere, and nothing when disabled', async () => {
    const pipe = new RecordingStream(false);
    const progress = await jobProgress(pipe as unknown as NodeJS.WriteStream, true);
    progress.event(pull(40));
    progress.state('STARTING');
    progress.state('STARTING');
    progress.state('RUNNING');
    progress.stop();
    expect(pipe.text).toBe('pull_progress: pulling 40%\nstate: STARTING\nstate: RUNNING\n');
    const quiet = new RecordingStream(true);
    const off = await jobProgress(quiet as unknown as NodeJS.WriteStream, false);
    off.event(pull(10));
    off.state('RUNNING');
    off.stop();
    expect(quiet.text).toBe('');
  });
});
