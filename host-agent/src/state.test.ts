import { chmodSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type AgentIdentity,
  IDENTITY_FILE,
  PAIRING_FILE,
  StateError,
  ensureStateDir,
  readIdentity,
  readPairing,
  readStatus,
  removePairing,
  writeIdentity,
  writePairing,
  writeStatus,
} from './state.js';

const identity: AgentIdentity = {
  version: 1,
  machine_id: '3f1c6a3e-2b7d-4a59-9c1e-0d5b8e6f7a21',
  public_key: Buffer.alloc(32, 1).toString('base64'),
  secret_key: Buffer.alloc(64, 2).toString('base64'),
  control_plane_public_key: Buffer.alloc(32, 3).toString('base64'),
  channel_url: 'ws://127.0.0.1:8080/api/v1/agents/channel?v=1',
  control_plane_url: 'http://127.0.0.1:8080',
  enrolled_at: '2025-01-01T00:00:00.000Z',
};

const freshDir = () => join(mkdtempSync(join(tmpdir(), 'ark-agent-state-')), 'state');
const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('state directory', () => {
  it('creates the directory owner-only and tightens a looser one', async () => {
    const dir = freshDir();
    await ensureStateDir(dir);
    expect(modeOf(dir)).toBe(0o700);
    chmodSync(dir, 0o755);
    await ensureStateDir(dir);
    expect(modeOf(dir)).toBe(0o700);
  });

  it('writes identity.json readable by its owner only and reads it back', async () => {
    const dir = freshDir();
    const previous = process.umask(0o000);
    try {
      await writeIdentity(dir, identity);
    } finally {
      process.umask(previous);
    }
    expect(modeOf(join(dir, IDENTITY_FILE))).toBe(0o600);
    expect(await readIdentity(dir)).toEqual(identity);
    // The temporary file was renamed, not left behind.
    expect(readdirSync(dir)).toEqual([IDENTITY_FILE]);
  });

  it('replaces the identity atomically: a reader sees the old or the new file, whole', async () => {
    const dir = freshDir();
    await writeIdentity(dir, identity);
    const next = { ...identity, machine_id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d' };
    await Promise.all([writeIdentity(dir, next), readIdentity(dir).then((seen) => expect([identity, next]).toContainEqual(seen))]);
    expect(await readIdentity(dir)).toEqual(next);
    expect(modeOf(join(dir, IDENTITY_FILE))).toBe(0o600);
  });

  it('answers null before pairing', async () => {
    expect(await readIdentity(freshDir())).toBeNull();
    expect(await readPairing(freshDir())).toBeNull();
    expect(await readStatus(freshDir())).toBeNull();
  });

  it('refuses an identity others can read, like ssh with a private key', async () => {
    const dir = freshDir();
    await writeIdentity(dir, identity);
    chmodSync(join(dir, IDENTITY_FILE), 0o644);
    await expect(readIdentity(dir)).rejects.toThrow(StateError);
    await expect(readIdentity(dir)).rejects.toThrow(/readable by others \(mode 644\); run chmod 600/);
  });

  it('refuses a damaged identity with a hint', async () => {
    const dir = freshDir();
    await ensureStateDir(dir);
    writeFileSync(join(dir, IDENTITY_FILE), JSON.stringify({ ...identity, secret_key: 'short' }), { mode: 0o600 });
    await expect(readIdentity(dir)).rejects.toThrow(/identity.json is damaged \(\/secret_key: .*\); move it away and pair again/);
    writeFileSync(join(dir, IDENTITY_FILE), '{', { mode: 0o600 });
    await expect(readIdentity(dir)).rejects.toThrow(/is not valid JSON/);
  });

  it('keeps an unfinished pairing 0600 and removes it', async () => {
    const dir = freshDir();
    await writePairing(dir, {
      version: 1,
      control_plane_url: 'http://127.0.0.1:8080',
      pairing_id: '3f1c6a3e-2b7d-4a59-9c1e-0d5b8e6f7a21',
      poll_secret: 'secret',
      user_code: 'ABCD-EFGH',
      expires_at: '2025-01-01T00:10:00.000Z',
      poll_interval_s: 5,
      public_key: identity.public_key,
      secret_key: identity.secret_key,
    });
    expect(modeOf(join(dir, PAIRING_FILE))).toBe(0o600);
    expect((await readPairing(dir))?.user_code).toBe('ABCD-EFGH');
    await removePairing(dir);
    expect(await readPairing(dir)).toBeNull();
  });

  it('writes the status report 0600 as well', async () => {
    const dir = freshDir();
    await ensureStateDir(dir);
    await writeStatus(dir, { pid: 1, agent_version: '0.1.0', started_at: 'a', updated_at: 'b', machine_id: identity.machine_id });
    expect(modeOf(join(dir, 'status.json'))).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir, 'status.json'), 'utf8')).pid).toBe(1);
    expect((await readStatus(dir))?.machine_id).toBe(identity.machine_id);
  });
});
