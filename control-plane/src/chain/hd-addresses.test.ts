import { pbkdf2Sync } from 'node:crypto';
import { HDKey } from '@scure/bip32';
import { mnemonicToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { DepositAddressDeriver, DepositXpubError } from './hd-addresses.js';

// The well-known development mnemonic (anvil's and hardhat's): its m/44'/60'/0'/0/i addresses are public facts.
const MNEMONIC = 'test test test test test test test test test test test junk';
const seed = pbkdf2Sync(MNEMONIC.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512');
const account = HDKey.fromMasterSeed(seed).derive("m/44'/60'/0'");

describe('deposit addresses from the account xpub', () => {
  it('derives child 0/i exactly as the private-key path does', () => {
    const deriver = new DepositAddressDeriver(account.publicExtendedKey);
    expect(deriver.addressAt(0n)).toBe('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
    for (const i of [1, 7, 1000]) {
      expect(deriver.addressAt(BigInt(i))).toBe(mnemonicToAccount(MNEMONIC, { addressIndex: i }).address);
    }
  });

  it('refuses an xprv, a key at another depth, and garbage', () => {
    expect(() => new DepositAddressDeriver(account.privateExtendedKey)).toThrow(DepositXpubError);
    expect(() => new DepositAddressDeriver(HDKey.fromMasterSeed(seed).derive("m/44'/60'").publicExtendedKey)).toThrow(/depth 3/);
    expect(() => new DepositAddressDeriver('xpub-nonsense')).toThrow(DepositXpubError);
  });
});
