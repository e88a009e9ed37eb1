// Read-only SFTP over one directory (a stopped job's volume). The client sees that directory as "/";
// nothing outside it can be reached, symlinks included, and every operation that would change
// anything is answered PERMISSION_DENIED.
import { constants, type Dirent, type Stats } from 'node:fs';
import { type FileHandle, lstat, open, opendir, realpath, stat } from 'node:fs/promises';
import { posix, sep } from 'node:path';
import type { Attributes, FileEntry, SFTPWrapper } from 'ssh2';
import ssh2 from 'ssh2';

// ssh2 is CommonJS: plain Node (the bundled agent) exposes only its default export to ESM.
const { utils } = ssh2;

const STATUS = utils.sftp.STATUS_CODE;
const OPEN_MODE = utils.sftp.OPEN_MODE;

/** Open file and directory handles per SFTP session. */
export const SFTP_MAX_OPEN_HANDLES = 64;
/** Largest READ answered; ssh2 frames outgoing SFTP packets at about 34 000 bytes. */
export const SFTP_MAX_READ_BYTES = 32 * 1024;
/** Directory entries sent per READDIR answer. */
const READDIR_BATCH = 128;
const WRITE_PERMITTED = OPEN_MODE.WRITE | OPEN_MODE.APPEND | OPEN_MODE.CREAT | OPEN_MODE.TRUNC | OPEN_MODE.EXCL;

type FileHandleEntry = { kind: 'file'; file: FileHandle; path: string };
type DirectoryHandleEntry = { kind: 'dir'; path: string; entries?: Dirent[]; position: number };
type HandleEntry = FileHandleEntry | DirectoryHandleEntry;

class Refused extends Error {
  constructor(readonly status: number) {
    super(`sftp status ${status}`);
  }
}

/** Normalises a client path to an absolute virtual path ("/" is the root directory). */
export function virtualPath(path: string): string {
  return posix.resolve('/', path.replace(/\0/g, ''));
}

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

function toVirtual(root: string, real: string): string {
  return real === root
    ? '/'
    : `/${real
        .slice(root.length + (root.endsWith(sep) ? 0 : 1))
        .split(sep)
        .join('/')}`;
}

function attributesOf(stats: Stats): Attributes {
  return {
    mode: stats.mode,
    uid: stats.uid,
    gid: stats.gid,
    size: stats.size,
    atime: Math.floor(stats.atimeMs / 1000),
    mtime: Math.floor(stats.mtimeMs / 1000),
  };
}

function permissionString(mode: number): string {
  const type = (mode & constants.S_IFMT) === constants.S_IFDIR ? 'd' : (mode & constants.S_IFMT) === constants.S_IFLNK ? 'l' : '-';
  const bits = 'rwxrwxrwx';
  let text = type;
  for (let index = 0; index < 9; index += 1) text += mode & (1 << (8 - index)) ? bits[index] : '-';
  return text;
}

function longName(name: string, stats: Stats): string {
  const date = new Date(stats.mtimeMs);
  const month = date.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  const day = String(date.getUTCDate()).padStart(2, ' ');
  const time = `${String(date.getUTCHours()).padStart(2, '0')}:${String(date.getUTCMinutes()).padStart(2, '0')}`;
  return `${permissionString(stats.mode)} ${stats.nlink} ${stats.uid} ${stats.gid} ${stats.size} ${month} ${day} ${time} ${name}`;
}

function statusForError(error: unknown): number {
  if (error instanceof Refused) return error.status;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return STATUS.NO_SUCH_FILE;
  if (code === 'EACCES' || code === 'EPERM' || code === 'ELOOP') return STATUS.PERMISSION_DENIED;
  return STATUS.FAILURE;
}

export type ReadOnlySftpOptions = {
  /** The directory shown as "/". */
  root: string;
  onError?: (error: unknown) => void;
};

/** Answers every request of one SFTP session from `root`, read-only. Returns when the session closes. */
export async function serveReadOnlySftp(sftp: SFTPWrapper, options: ReadOnlySftpOptions): Promise<void> {
  // Listeners must be in place before the first await: ssh2 answers OP_UNSUPPORTED to any request
  // that arrives while no listener exists.
  const rootRealPromise = realpath(options.root);
  rootRealPromise.catch(() => undefined);
  const handles = new Map<number, HandleEntry>();
  let nextHandle = 1;

  /** The real path for a virtual one; `followFinal` false resolves the parent only (LSTAT). */
  const resolve = async (path: string, followFinal = true): Promise<string> => {
    const rootReal = await rootRealPromise;
    const virtual = virtualPath(path);
    const joined = virtual === '/' ? rootReal : `${rootReal}${virtual.split('/').join(sep)}`;
    if (!followFinal && virtual !== '/') {
      const parent = await realpath(posix.dirname(joined));
      if (!isInside(rootReal, parent)) throw new Refused(STATUS.PERMISSION_DENIED);
      return `${parent}${sep}${posix.basename(joined)}`;
    }
    const real = await realpath(joined);
    if (!isInside(rootReal, real)) throw new Refused(STATUS.PERMISSION_DENIED);
    return real;
  };

  const handleOf = (buffer: Buffer): HandleEntry => {
    const entry = buffer.length === 4 ? handles.get(buffer.readUInt32BE(0)) : undefined;
    if (entry === undefined) throw new Refused(STATUS.FAILURE);
    return entry;
  };

  const newHandle = (entry: HandleEntry): Buffer => {
    if (handles.size >= SFTP_MAX_OPEN_HANDLES) throw new Refused(STATUS.FAILURE);
    const id = nextHandle;
    nextHandle = (nextHandle % 0x7fffffff) + 1;
    handles.set(id, entry);
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32BE(id, 0);
    return buffer;
  };

  const answer = (requestId: number, work: () => Promise<void>) => {
    work().catch((error: unknown) => {
      const status = statusForError(error);
      // Missing files and refusals are the client's business; anything else is worth a log line.
      if (status === STATUS.FAILURE && !(error instanceof Refused)) options.onError?.(error);
      sftp.status(requestId, status);
    });
  };

  const deny = (requestId: number) => sftp.status(requestId, STATUS.PERMISSION_DENIED, 'read-only');

  sftp.on('OPEN', (requestId: number, filename: string, flags: number) =>
    answer(requestId, async () => {
      if ((flags & WRITE_PERMITTED) !== 0 || (flags & OPEN_MODE.READ) === 0) throw new Refused(STATUS.PERMISSION_DENIED);
      const real = await resolve(filename);
      const info = await stat(real);
      if (!info.isFile()) throw new Refused(STATUS.FAILURE);
      const file = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        sftp.handle(requestId, newHandle({ kind: 'file', file, path: real }));
      } catch (error) {
        await file.close();
        throw error;
      }
    }),
  );

  sftp.on('READ', (requestId: number, handle: Buffer, offset: number, length: number) =>
    answer(requestId, async () => {
      const entry = handleOf(handle);
      if (entry.kind !== 'file') throw new Refused(STATUS.FAILURE);
      const buffer = Buffer.alloc(Math.max(0, Math.min(length, SFTP_MAX_READ_BYTES)));
      const { bytesRead } = await entry.file.read(buffer, 0, buffer.length, offset);
      if (bytesRead === 0) {
        sftp.status(requestId, STATUS.EOF);
        return;
      }
      sftp.data(requestId, buffer.subarray(0, bytesRead));
    }),
  );

  sftp.on('FSTAT', (requestId: number, handle: Buffer) =>
    answer(requestId, async () => {
      const entry = handleOf(handle);
      sftp.attrs(requestId, attributesOf(entry.kind === 'file' ? await entry.file.stat() : await stat(entry.path)));
    }),
  );

  sftp.on('STAT', (requestId: number, path: string) =>
    answer(requestId, async () => {
      sftp.attrs(requestId, attributesOf(await stat(await resolve(path))));
    }),
  );

  sftp.on('LSTAT', (requestId: number, path: string) =>
    answer(requestId, async () => {
      sftp.attrs(requestId, attributesOf(await lstat(await resolve(path, false))));
    }),
  );

  sftp.on('REALPATH', (requestId: number, path: string) =>
    answer(requestId, async () => {
      let virtual = virtualPath(path);
      try {
        virtual = toVirtual(await rootRealPromise, await resolve(virtual));
      } catch {
        // A path that does not exist (yet) is still answered in normal form, as OpenSSH does.
      }
      sftp.name(requestId, [{ filename: virtual, longname: virtual, attrs: {} as Attributes }]);
    }),
  );

  sftp.on('OPENDIR', (requestId: number, path: string) =>
    answer(requestId, async () => {
      const real = await resolve(path);
      if (!(await stat(real)).isDirectory()) throw new Refused(STATUS.NO_SUCH_FILE);
      sftp.handle(requestId, newHandle({ kind: 'dir', path: real, position: 0 }));
    }),
  );

  sftp.on('READDIR', (requestId: number, handle: Buffer) =>
    answer(requestId, async () => {
      const entry = handleOf(handle);
      if (entry.kind !== 'dir') throw new Refused(STATUS.FAILURE);
      if (entry.entries === undefined) {
        const listed: Dirent[] = [];
        const directory = await opendir(entry.path);
        for await (const dirent of directory) listed.push(dirent);
        entry.entries = listed;
      }
      const batch = entry.entries.slice(entry.position, entry.position + READDIR_BATCH);
      entry.position += batch.length;
      if (batch.length === 0) {
        sftp.status(requestId, STATUS.EOF);
        return;
      }
      const names: FileEntry[] = [];
      for (const dirent of batch) {
        try {
          const info = await lstat(`${entry.path}${sep}${dirent.name}`);
          names.push({ filename: dirent.name, longname: longName(dirent.name, info), attrs: attributesOf(info) });
        } catch {
          // Vanished between listing and stat.
        }
      }
      sftp.name(requestId, names);
    }),
  );

  sftp.on('CLOSE', (requestId: number, handle: Buffer) =>
    answer(requestId, async () => {
      const entry = handleOf(handle);
      handles.delete(handle.readUInt32BE(0));
      if (entry.kind === 'file') await entry.file.close();
      sftp.status(requestId, STATUS.OK);
    }),
  );

  for (const event of ['WRITE', 'FSETSTAT', 'SETSTAT', 'REMOVE', 'RMDIR', 'MKDIR', 'RENAME', 'SYMLINK']) {
    sftp.on(event, (requestId: number) => deny(requestId));
  }
  for (const event of ['READLINK', 'EXTENDED']) {
    sftp.on(event, (requestId: number) => sftp.status(requestId, STATUS.OP_UNSUPPORTED));
  }

  await new Promise<void>((resolveClosed) => {
    sftp.once('close', () => resolveClosed());
    // The client's EOF ends the session; closing our side lets its channel close (OpenSSH waits for that).
    sftp.once('end', () => {
      sftp.end();
      resolveClosed();
    });
  });
  for (const entry of handles.values()) {
    if (entry.kind === 'file') await entry.file.close().catch(() => undefined);
  }
  handles.clear();
}
