import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// ARCHITECTURE.md is the newcomer's map: every file or folder it names must exist, or the map has drifted.
const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** Backticked paths in the page (no spaces, no globs, no placeholders, not URLs of the API). */
function pathsNamedIn(markdown: string): string[] {
  const named = new Set<string>();
  for (const match of markdown.matchAll(/`([^`\s]+)`/g)) {
    const text = match[1] as string;
    if (!text.includes('/') && !/\.(ts|md|json)$/.test(text)) continue;
    if (text.startsWith('/') || /[*<>(){}:]/.test(text)) continue;
    named.add(text);
  }
  return [...named];
}

/** Paths are written from the repository root, or from control-plane/src for the control plane's own folders. */
function resolves(path: string): boolean {
  return [join(repoRoot, path), join(repoRoot, 'control-plane', 'src', path)].some((candidate) => existsSync(candidate));
}

describe('ARCHITECTURE.md', () => {
  const markdown = readFileSync(join(repoRoot, 'ARCHITECTURE.md'), 'utf8');
  const paths = pathsNamedIn(markdown);

  it('names files', () => {
    expect(paths.length).toBeGreaterThan(40);
  });

  it('names only files and folders that exist', () => {
    expect(paths.filter((path) => !resolves(path))).toEqual([]);
  });

  it('draws the three flows', () => {
    for (const flow of ['### A reservation', '### A meter receipt', '### An offer commit']) expect(markdown).toContain(flow);
  });
});
