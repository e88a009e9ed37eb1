import type { RouteOptions } from 'fastify';

/** A route URL pattern as a regular expression over request paths: `:param` is one path segment, `*` anything. */
function patternOf(url: string): RegExp {
  let source = '';
  for (const segment of url.split(/(:[A-Za-z0-9_]+(?:\([^)]*\))?|\*)/)) {
    if (segment === '*') source += '.*';
    else if (segment.startsWith(':')) source += '[^/]+';
    else source += segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/**
 * The methods each path is served with, learned from the routes as they are registered (an onRoute hook), so a
 * request that reaches no route can be told apart: a known path with another method (405 and `Allow`) from a path
 * nothing serves (404). Only answers that are already 404s look here.
 */
export class RouteMethods {
  readonly #routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];
  readonly #byUrl = new Map<string, Set<string>>();

  readonly onRoute = (route: RouteOptions): void => {
    let methods = this.#byUrl.get(route.url);
    if (!methods) {
      methods = new Set();
      this.#byUrl.set(route.url, methods);
      this.#routes.push({ pattern: patternOf(route.url), methods });
    }
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) methods.add(method.toUpperCase());
  };

  /** The methods `path` is served with (sorted), empty when no route matches it. */
  allowed(path: string): string[] {
    const found = new Set<string>();
    for (const route of this.#routes) if (route.pattern.test(path)) for (const method of route.methods) found.add(method);
    return [...found].sort();
  }
}
