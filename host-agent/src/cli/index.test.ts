import { describe, expect, it } from 'vitest';
import type { CliContext } from './context.js';
import { USAGE, runAgentCli } from './index.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  // Only out and err are reached by these paths.
  const ctx = { out: (text: string) => void out.push(text), err: (text: string) => void err.push(text) } as unknown as CliContext;
  return { ctx, out, err };
}

describe('runAgentCli', () => {
  it('prints the usage for help', async () => {
    for (const argv of [[], ['help'], ['--help']]) {
      const { ctx, out } = capture();
      expect(await runAgentCli(argv, ctx)).toBe(0);
      expect(out.join('')).toBe(USAGE);
    }
  });

  it('refuses an unknown command or option with exit code 2 and the usage', async () => {
    const unknown = capture();
    expect(await runAgentCli(['start'], unknown.ctx)).toBe(2);
    expect(unknown.err.join('')).toMatch(/^ark-agent: unknown command "start"\n\nUsage: ark-agent/);
    const badOption = capture();
    expect(await runAgentCli(['status', '--verbose'], badOption.ctx)).toBe(2);
    expect(badOption.err.join('')).toMatch(/^ark-agent: Unknown option '--verbose'/);
  });
});
