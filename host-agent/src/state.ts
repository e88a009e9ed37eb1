import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * The agent's state directory (ARK_AGENT_STATE_DIR): identity.json (the machine's key pair and the pinned
 * control-plane key), pairing.json (an unfinished pairing, so a restarted `pair` resumes it), status.json
 * (what the running daemon last knew, for `ark-agent status`), plus the channel client's queue files.
 * Everything is owner-only: the directory 0700, the files 0600.
 */

export const IDENTITY_FILE = 'identity.json';
export const PAIRING_FILE = 'pairing.json';
export const STATUS_FILE = 'status.json';

const Base64 = (bytes: number) => Type.String({ minLength: Math.ceil(bytes / 3) * 4, maxLength: Math.ceil(bytes / 3) * 4 });

export const AgentIdentity = Type.Object(
  {
    version: Type.Literal(1),
    machine_id: Type.String({ minLength: 1, maxLength: 64 }),
    /** ed25519 public key, base64 of 32 bytes. */
    public_key: Base64(32),
    /** tweetnacl secret key (seed followed by public key), base64 of 64 bytes. */
    secret_key: Base64(64),
    /** Pinned at enrollment: every frame from the control plane must verify under it. */
    control_plane_public_key: Type.String({ minLength: 1, maxLength: 200 }),
    channel_url: Type.String({ minLength: 1, maxLength: 2048 }),
    control_plane_url: Type.String({ minLength: 1, maxLength: 2048 }),
    enrolled_at: Type.String(),
  },
  { additionalProperties: false },
);
export type AgentIdentity = Static<typeof AgentIdentity>;

export const PendingPairing = Type.Object(
  {
    version: Type.Literal(1),
    control_plane_url: Type.String({ minLength: 1, maxLength: 2048 }),
    pairing_id: Type.String({ minLength: 1, maxLength: 64 }),
    poll_secret: Type.String({ minLength: 1, maxLength: 200 }),
    user_code: Type.String({ minLength: 1, maxLength: 32 }),
    expires_at: Type.String(),
    poll_interval_s: Type.Number({ minimum: 0 }),
    verification_uri: Type.Optional(Type.String({ maxLength: 2048 })),
    /** The key pair generated for this pairing, so a resumed pairing enrolls the same key. */
    public_key: Base64(32),
    secret_key: Base64(64),
    /** Kept once a poll hands it out: that poll consumed the pairing, so losing it would strand the machine. */
    enrollment_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    enrollment_token_received_at: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type PendingPairing = Static<typeof PendingPairing>;

export class StateError extends Error {
  override name = 'StateError';
}

/** Creates the state directory owner-only, and tightens it if it already exists looser. */
export async function ensureStateDir(stateDir: string): Promise<void> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const info = await stat(stateDir);
  if ((info.mode & 0o077) !== 0) await chmod(stateDir, 0o700);
}

/**
 * Writes JSON so a reader sees the old file or the new one, never half of either: a temporary file in the same
 * directory, created 0600, flushed to disk, renamed over the target, then the directory flushed.
 */
export async function writeJsonAtomic(path: string, value: unknown, options: { durable?: boolean } = {}): Promise<void> {
  const durable = options.durable ?? true;
  const temporary = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temporary, 'wx', 0o600);
  try {
    // The mode given to open is filtered by the umask; chmod says exactly 0600 whatever it is.
    await handle.chmod(0o600);
    await handle.writeFile(`${JSON.stringify(value, null, 2)}\n`, 'utf8');
    if (durable) await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  if (durable) await syncDirectory(dirname(path));
}

async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the rename is still atomic there.
  } finally {
    await handle.close();
  }
}

async function readJson(path: string): Promise<unknown | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new StateError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new StateError(`${path} is not valid JSON; move it away and pair again`);
  }
}

async function readChecked<T extends TSchema>(schema: T, path: string, secret: boolean): Promise<Static<T> | null> {
  const value = await readJson(path);
  if (value === null) return null;
  if (secret) {
    // Like ssh with a private key: a secret others can read is refused rather than used.
    const info = await stat(path);
    if ((info.mode & 0o077) !== 0) {
      throw new StateError(`${path} is readable by others (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 ${path}`);
    }
  }
  const error = Value.Errors(schema, value).First();
  if (error !== undefined) throw new StateError(`${path} is damaged (${error.path || '/'}: ${error.message}); move it away and pair again`);
  return value as Static<T>;
}

export function identityPath(stateDir: string): string {
  return join(stateDir, IDENTITY_FILE);
}

export async function readIdentity(stateDir: string): Promise<AgentIdentity | null> {
  return readChecked(AgentIdentity, identityPath(stateDir), true);
}

export async function writeIdentity(stateDir: string, identity: AgentIdentity): Promise<void> {
  await ensureStateDir(stateDir);
  await writeJsonAtomic(identityPath(stateDir), identity);
}

export async function readPairing(stateDir: string): Promise<PendingPairing | null> {
  return readChecked(PendingPairing, join(stateDir, PAIRING_FILE), true);
}

export async function writePairing(stateDir: string, pairing: PendingPairing): Promise<void> {
  await ensureStateDir(stateDir);
  await writeJsonAtomic(join(stateDir, PAIRING_FILE), pairing);
}

export async function removePairing(stateDir: string): Promise<void> {
  await rm(join(stateDir, PAIRING_FILE), { force: true });
}

/** What the daemon last knew, written by `run` and read by `status`. Loosely typed: it is a report, not an input. */
export type AgentStatusReport = {
  pid: number;
  agent_version: string;
  started_at: string;
  updated_at: string;
  stopped_at?: string;
  machine_id: string;
  [key: string]: unknown;
};

export async function writeStatus(stateDir: string, report: AgentStatusReport): Promise<void> {
  // Rewritten every few seconds and harmless to lose: skip the fsyncs.
  await writeJsonAtomic(join(stateDir, STATUS_FILE), report, { durable: false });
}

export async function readStatus(stateDir: string): Promise<AgentStatusReport | null> {
  const value = await readJson(join(stateDir, STATUS_FILE));
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  return value as AgentStatusReport;
}
