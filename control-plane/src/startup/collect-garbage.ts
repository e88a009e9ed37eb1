import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// Why the control plane collects its garbage once before it serves.
//
// V8 gives every object a hidden class (a "map"). An object made as `{}` and given a property later (Node's request
// headers, Fastify's reply headers, a parsed JSON body, route params) moves to a map reached by a transition from
// the `{}` map, keyed by the property's name, and every object given the same first property shares that map. The
// `{}` map holds at most 1,536 such transitions. Compiling the API's schemas (Ajv's code generator, and one
// fast-json-stringify serializer per route and status) adds a first property to a fresh `{}` under a new name
// (`err78`, `_errs12`, `__fjs_root_431`...) about a thousand times over: the table is full before the first
// request, though nearly all those objects are already garbage. From then on, until a full collection clears the
// transitions of dead objects, each request's headers object gets a map of its own: every property read on it misses
// V8's inline caches and goes to the runtime (four such misses per request on the account read), and every request
// builds new maps. Measured on a 2-core VM (test/bench/README.md), that was a third of the CPU per request on the
// account read, and it lasts until the first full collection, which a quiet server may not run for a long while.
//
// One full collection after the app is built and before it listens clears those transitions (about 1,000 of the
// 1,536 go): the request path's objects then share their maps, as in a small app.

/**
 * Runs one full garbage collection, through `gc` when the process was started with --expose-gc, otherwise through a
 * `gc` exposed for a moment to a separate context (the flag is turned off again). Returns false where neither works
 * (nothing is collected then; the app still serves, only slower until V8 collects by itself).
 */
export function collectStartupGarbage(): boolean {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') {
    (exposed as () => void)();
    return true;
  }
  let gc: unknown;
  try {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc');
  } catch {
    return false;
  } finally {
    // Contexts made later (the vm module's users) do not get a `gc` of their own.
    setFlagsFromString('--no-expose-gc');
  }
  if (typeof gc !== 'function') return false;
  (gc as () => void)();
  return true;
}
