import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { keepTickObjectMaps, keptTickObject } from './keep-tick-maps.js';

const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

describe('keeping one of Node’s tick objects alive (startup/keep-tick-maps.ts)', () => {
  it('keeps a real tick object, once', () => {
    expect(keepTickObjectMaps()).toBe(true);
    const kept = keptTickObject();
    // What lib/internal/process/task_queues.js queues: the two async-id symbols, the callback and its arguments (and
    // an AsyncLocalStorage's store symbol once one was used in this process, as an earlier test file may have).
    expect(kept).not.toBeNull();
    const symbols = Object.getOwnPropertySymbols(kept).map((symbol) => symbol.description);
    expect(symbols.slice(0, 2)).toEqual(['async_id_symbol', 'trigger_async_id_symbol']);
    expect(symbols.filter((name) => name !== 'kResourceStore')).toHaveLength(2);
    expect(typeof (kept as { callback?: unknown }).callback).toBe('function');
    expect(keepTickObjectMaps()).toBe(true);
    expect(keptTickObject()).toBe(kept);
  });

  it('gives every later tick the kept maps, across full collections', () => {
    // In a process of its own: full collections on demand, and V8's own word on whether two objects share a map.
    const script = `
      const { createHook } = await import('node:async_hooks');
      const { setFlagsFromString } = await import('node:v8');
      setFlagsFromString('--allow-natives-syntax');
      const { keptTickObject } = await import(${JSON.stringify(here('./keep-tick-maps.ts'))});
      const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
      const results = [];
      for (let round = 0; round < 5; round++) {
        globalThis.gc();
        await new Promise((resolve) => setImmediate(resolve));
        let fresh = null;
        const hook = createHook({ init(_id, type, _trigger, resource) { if (type === 'TickObject' && fresh === null) fresh = resource; } }).enable();
        process.nextTick(() => {});
        hook.disable();
        results.push(sameMap(keptTickObject(), fresh));
      }
      process.stdout.write(JSON.stringify(results));
    `;
    const output = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(JSON.parse(output)).toEqual([true, true, true, true, true]);
  });

  it('runs first in the control plane: main.ts imports it before any other module', () => {
    const firstImport = readFileSync(here('../main.ts'), 'utf8')
      .split('\n')
      .find((line) => line.startsWith('import '));
    expect(firstImport).toBe("import './startup/keep-tick-maps.js';");
  });
});
