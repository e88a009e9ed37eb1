import { createHook } from 'node:async_hooks';

// Why the control plane keeps one of Node's tick objects alive for its whole life.
//
// `process.nextTick` queues each callback in an object literal with two computed symbol keys
// (`{ [async_id_symbol]: ..., [trigger_async_id_symbol]: ..., callback, args }`, lib/internal/process/task_queues.js).
// A literal's computed keys are added to a fresh object one by one, and the hidden classes ("maps") they lead to
// are held only by the objects that have them (and weakly by the transitions and inline caches that found them).
// Tick objects live for one turn of the event loop, so whenever a full collection runs with none queued, the whole
// chain of maps dies, and the next tick builds new ones. Each time, the inline caches in `nextTick` (inlined into
// Node's stream and http code: ten ticks per HTTP request) see maps they have not seen before; a process that has
// run many full collections (loading and compiling the control plane runs dozens) leaves them megamorphic, and from
// then on every tick defines its properties through the runtime: map transition searches, migrations, feedback
// updates. Measured on the account read (perf, 2-core VM): about 6 % of the control plane's CPU per request in V8's
// runtime for this alone, none of it in a small app; `nextTick` itself cost 600 ns a call against 250 ns.
//
// Holding one tick object keeps its maps alive through every collection, so every later tick finds the same
// transitions and the caches stay monomorphic. It must run before the collections that would reset them: first in
// the process (main.ts imports this module before anything else); kept later, it no longer helps.

let kept: object | null = null;

/**
 * Captures one tick object (the `resource` Node hands an async hook's `init` for a `TickObject`) and keeps it for the
 * life of the process. Synchronous: the hook is enabled for one `process.nextTick` call only. Idempotent; returns
 * whether a tick object is kept.
 */
export function keepTickObjectMaps(): boolean {
  if (kept !== null) return true;
  const hook = createHook({
    init(_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject' && kept === null) kept = resource;
    },
  });
  hook.enable();
  try {
    process.nextTick(noop);
  } finally {
    hook.disable();
  }
  return kept !== null;
}

/** The tick object kept (tests). */
export const keptTickObject = (): object | null => kept;

function noop(): void {}

keepTickObjectMaps();
