import { spawnSync } from 'node:child_process';
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { HDKey } from '@scure/bip32';
import { describe, expect, it } from 'vitest';
import { DepositAddressDeriver } from './hd-addresses.js';
import { checkAccountXpub, DepositXpubError } from './xpub.js';

// The configuration's light xpub check (issue 25, item 5) refuses exactly what the deriver refuses, with the same
// words, so `ark-cp serve` still stops at start on a bad ARK_DEPOSIT_XPUB; and `ark-cp --help` no longer loads viem
// or @scure/bip32 to make that check (nor @sinclair/typebox: its configuration and commands import plain constants
// from '@ark/shared/limits' and load views when a command runs).

const seed = pbkdf2Sync('test test test test test test test test test test test junk', 'mnemonic', 2048, 64, 'sha512');
const root = HDKey.fromMasterSeed(seed);
const account = root.derive("m/44'/60'/0'");

/** The xpub with one base58 character changed (its checksum no longer holds). */
function mangled(xpub: string): string {
  const at = 40;
  return `${xpub.slice(0, at)}${xpub[at] === 'a' ? 'b' : 'a'}${xpub.slice(at + 1)}`;
}

/** A key with the given version bytes, re-encoded with a valid checksum (bs58check as bip32 writes it). */
function withVersion(key: HDKey, versions: { public: number; private: number }): string {
  return new HDKey({
    versions,
    depth: key.depth,
    index: key.index,
    parentFingerprint: key.parentFingerprint,
    chainCode: key.chainCode as Uint8Array,
    publicKey: key.publicKey as Uint8Array,
  }).publicExtendedKey;
}

const outcome = (check: () => unknown): string => {
  try {
    check();
    return 'accepted';
  } catch (error) {
    expect(error).toBeInstanceOf(DepositXpubError);
    return 'refused';
  }
};

describe('the configuration’s xpub check', () => {
  const cases: Array<[string, string]> = [
    ['an account xpub', account.publicExtendedKey],
    ['another account xpub', HDKey.fromMasterSeed(randomBytes(32)).derive("m/44'/60'/0'").publicExtendedKey],
    ['the same with spaces around', `  ${account.publicExtendedKey}\n`],
    ['an xprv', account.privateExtendedKey],
    ['a key at depth 2', root.derive("m/44'/60'").publicExtendedKey],
    ['a key at depth 4', account.deriveChild(0).publicExtendedKey],
    ['the master key', root.publicExtendedKey],
    ['a changed character', mangled(account.publicExtendedKey)],
    ['a testnet tpub', withVersion(account, { public: 0x043587cf, private: 0x04358394 })],
    ['garbage', 'xpub-nonsense'],
    ['a truncated key', account.publicExtendedKey.slice(0, 60)],
    ['nothing but ones', '1'.repeat(111)],
  ];

  it.each(cases)('decides %s as the deriver does', (_name, xpub) => {
    expect(outcome(() => checkAccountXpub(xpub))).toBe(outcome(() => new DepositAddressDeriver(xpub)));
  });

  it('accepts an account xpub and says why it refuses the others', () => {
    expect(() => checkAccountXpub(account.publicExtendedKey)).not.toThrow();
    expect(() => checkAccountXpub(account.privateExtendedKey)).toThrow(/holds a private key/);
    expect(() => checkAccountXpub(root.derive("m/44'/60'").publicExtendedKey)).toThrow(/depth 3\), got depth 2/);
    expect(() => checkAccountXpub(mangled(account.publicExtendedKey))).toThrow(/^is not a valid extended public key/);
    expect(() => checkAccountXpub('xpub-nonsense')).toThrow(/^is not a valid extended public key/);
  });
});

describe('ark-cp and the deposit xpub', () => {
  const bin = fileURLToPath(new URL('../../bin/ark-cp.mjs', import.meta.url));
  const env = { PATH: process.env.PATH, ARK_SECRET_KEY: randomBytes(32).toString('hex'), LOG_LEVEL: 'silent' };

  it('`ark-cp serve` stops at start on a bad ARK_DEPOSIT_XPUB: exit code 2, the reason on stderr', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ark-xpub-'));
    try {
      for (const [xpub, reason] of [
        [account.privateExtendedKey, 'ARK_DEPOSIT_XPUB holds a private key'],
        [root.derive("m/44'/60'").publicExtendedKey, "ARK_DEPOSIT_XPUB must be the account-level key m/44'/60'/0' (depth 3)"],
        [mangled(account.publicExtendedKey), 'ARK_DEPOSIT_XPUB is not a valid extended public key'],
      ] as const) {
        // A server that took the xpub would start and listen: the wait ends it (and the test fails).
        const result = spawnSync(process.execPath, [bin, 'serve'], {
          encoding: 'utf8',
          timeout: 60_000,
          env: { ...env, ARK_DATA_DIR: dataDir, PORT: '0', ARK_DEPOSIT_XPUB: xpub },
        });
        expect(result.stderr).toContain(`ark-cp: configuration error: ${reason}`);
        expect(result.status).toBe(2);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('`ark-cp --help` with a good xpub set loads neither viem nor @scure/bip32, nor the schema library', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ark-loads-'));
    try {
      // A module hook that names every npm package the process loads, on stderr.
      writeFileSync(
        join(dir, 'hooks.mjs'),
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the hook's own source, whose template the hook evaluates
        'export async function load(url, context, next) { if (url.includes("/node_modules/")) process.stderr.write(`LOADED ${url}\\n`); return next(url, context); }\n',
      );
      writeFileSync(
        join(dir, 'register.mjs'),
        `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
      );
      const result = spawnSync(process.execPath, ['--import', join(dir, 'register.mjs'), bin, '--help'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...env, ARK_DATA_DIR: dir, ARK_DEPOSIT_XPUB: account.publicExtendedKey },
      });
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout).toContain('serve');
      const loaded = result.stderr.split('\n').filter((line) => line.startsWith('LOADED '));
      // The hook sees what loads: pino at least, so an empty list cannot pass by accident.
      expect(loaded.some((line) => line.includes('/pino/'))).toBe(true);
      expect(loaded.filter((line) => /\/(viem|ox|abitype|@scure\/bip32|@noble\/curves|@sinclair\/typebox)\//.test(line))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
