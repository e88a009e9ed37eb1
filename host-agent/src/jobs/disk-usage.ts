// The bytes a directory tree takes on disk, for a job's volume (its writable layer is the engine's to measure).
// Walked from the host with lstat: symlinks are not followed, and a file's allocated blocks count, so a sparse file
// counts what it really holds and a renter cannot hide data in one.
import { lstat, opendir } from 'node:fs/promises';
import { join } from 'node:path';

export type DirectoryUsage = {
  bytes: number;
  /** Entries looked at; the walk stops at the bound, leaving `bytes` a lower bound. */
  entries: number;
  complete: boolean;
};

/** Bound on one walk: a volume of more files than this is measured in part (and the log says so). */
export const DIRECTORY_WALK_MAX_ENTRIES = 1_000_000;

/** Sums the allocated size of everything under `root` (root included); undefined when root cannot be read. */
export async function directoryUsage(root: string, maxEntries = DIRECTORY_WALK_MAX_ENTRIES): Promise<DirectoryUsage | undefined> {
  let rootStat: Awaited<ReturnType<typeof lstat>>;
  try {
    rootStat = await lstat(root);
  } catch {
    return undefined;
  }
  const usage: DirectoryUsage = { bytes: allocated(rootStat), entries: 1, complete: true };
  if (!rootStat.isDirectory()) return usage;
  const pending = [root];
  while (pending.length > 0) {
    const directory = pending.pop() as string;
    let handle: Awaited<ReturnType<typeof opendir>>;
    try {
      handle = await opendir(directory);
    } catch {
      // Removed since it was listed, or unreadable: what it held is not counted.
      continue;
    }
    for await (const entry of handle) {
      if (usage.entries >= maxEntries) {
        usage.complete = false;
        // Leaving the loop closes the directory.
        return usage;
      }
      usage.entries += 1;
      const path = join(directory, entry.name);
      try {
        usage.bytes += allocated(await lstat(path));
      } catch {
        continue;
      }
      if (entry.isDirectory()) pending.push(path);
    }
  }
  return usage;
}

function allocated(stat: { blocks: number; size: number }): number {
  // st_blocks is in 512-byte units whatever the file system's block size; a file system without it says 0.
  return stat.blocks > 0 ? stat.blocks * 512 : stat.size;
}
