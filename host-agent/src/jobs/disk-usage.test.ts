import { mkdir, mkdtemp, open, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { directoryUsage } from './disk-usage.js';

describe('directoryUsage', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'ark-disk-usage-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('sums what files take on disk, in nested folders, without following symlinks out of the tree', async () => {
    await mkdir(join(root, 'a/b'), { recursive: true });
    await writeFile(join(root, 'a/one.bin'), Buffer.alloc(256 * 1024, 1));
    await writeFile(join(root, 'a/b/two.bin'), Buffer.alloc(512 * 1024, 2));
    const outside = await mkdtemp(join(tmpdir(), 'ark-disk-usage-outside-'));
    try {
      await writeFile(join(outside, 'big.bin'), Buffer.alloc(4 * 1024 * 1024, 3));
      await symlink(outside, join(root, 'a/link'));
      const usage = await directoryUsage(root);
      expect(usage?.complete).toBe(true);
      expect(usage?.entries).toBe(6);
      expect(usage?.bytes).toBeGreaterThanOrEqual(768 * 1024);
      expect(usage?.bytes).toBeLessThan(1024 * 1024);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('counts a sparse file by what it holds, not by its length', async () => {
    const handle = await open(join(root, 'sparse.bin'), 'w');
    await handle.write(Buffer.alloc(4096, 1), 0, 4096, 1024 * 1024 * 1024);
    await handle.close();
    const usage = await directoryUsage(root);
    expect(usage?.bytes).toBeLessThan(1024 * 1024);
  });

  it('stops at its bound, saying the figure is a lower one, and answers nothing for a folder that is not there', async () => {
    for (let index = 0; index < 20; index += 1) await writeFile(join(root, `f${index}`), 'x');
    expect(await directoryUsage(root, 5)).toMatchObject({ entries: 5, complete: false });
    expect(await directoryUsage(join(root, 'missing'))).toBeUndefined();
  });
});
