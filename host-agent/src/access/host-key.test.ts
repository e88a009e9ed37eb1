import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import ssh2 from 'ssh2';
import { describe, expect, it } from 'vitest';
import { fingerprintOf, generateHostKey } from './host-key.js';

const { utils } = ssh2;

describe('generateHostKey', () => {
  it('writes keys ssh2 parses, whose public half is the one announced', () => {
    const fingerprints = new Set<string>();
    for (let i = 0; i < 300; i += 1) {
      const key = generateHostKey();
      const parsed = utils.parseKey(key.privateKey);
      if (parsed instanceof Error) throw parsed;
      const parsedKey = Array.isArray(parsed) ? parsed[0] : parsed;
      expect(parsedKey.type).toBe('ssh-ed25519');
      expect(`ssh-ed25519 ${parsedKey.getPublicSSH().toString('base64')}`).toBe(key.publicKey);
      expect(fingerprintOf(parsedKey.getPublicSSH())).toBe(key.fingerprint);
      // It signs, and the public half verifies it.
      const data = Buffer.from(`job ${i}`);
      expect(parsedKey.verify(data, parsedKey.sign(data))).toBe(true);
      fingerprints.add(key.fingerprint);
    }
    expect(fingerprints.size).toBe(300);
  });

  it('never hangs while the heap churns (Node 20 deadlocks exporting a generated ed25519 key as JWK under GC)', () => {
    // In a child: a hang there fails this test by its timeout instead of stopping the test process for good. A 1 MiB
    // young generation makes a collection likely inside any call that allocates (the old code hung within 400 keys).
    const moduleUrl = new URL('./host-key.ts', import.meta.url).href;
    const script = `
      const { generateHostKey } = await import(${JSON.stringify(moduleUrl)});
      const junk = [];
      for (let i = 0; i < 3000; i += 1) {
        if (i % 10 === 0) junk.push(new Array(50).fill(i));
        if (junk.length > 2000) junk.splice(0, 1000);
        generateHostKey();
      }
      console.log('generated 3000');
    `;
    const child = spawnSync(process.execPath, ['--max-semi-space-size=1', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.error, child.stderr).toBeUndefined();
    expect(child.stdout.trim(), child.stderr).toBe('generated 3000');
  }, 60_000);
});
