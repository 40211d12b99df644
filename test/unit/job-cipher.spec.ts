import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  EncryptedValueError,
  EncryptionKeyMissingError,
  isSealed,
  JobCipher,
  sealedKeyId,
} from '../../lib/model/index.js';

const K1 = randomBytes(32).toString('base64');
const K2 = randomBytes(32).toString('base64');
const cipher = new JobCipher({ keys: { k1: K1 }, current: 'k1' });

describe('JobCipher', () => {
  it('opens what it sealed, for any JSON value; the sealed text names the key and holds no plaintext', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const json = JSON.stringify(value);
        const sealed = JSON.parse(cipher.sealJson(json)) as string;
        expect(isSealed(sealed)).toBe(true);
        expect(sealedKeyId(sealed)).toBe('k1');
        if (json.length > 8) expect(sealed).not.toContain(json);
        expect(cipher.openValue(sealed, 'v')).toEqual(JSON.parse(json));
      }),
    );
  });

  it('seals the same text differently each time (a fresh IV per value)', () => {
    expect(cipher.sealText('same')).not.toBe(cipher.sealText('same'));
  });

  it('any listed key opens; new values use current; a keyring without the key says which is missing', () => {
    const sealedWithK1 = cipher.sealText('secret');
    const rotated = new JobCipher({ keys: { k1: K1, k2: K2 }, current: 'k2' });
    expect(rotated.openText(sealedWithK1, 'v')).toBe('secret');
    const resealed = rotated.reseal(sealedWithK1, false)!;
    expect(sealedKeyId(resealed)).toBe('k2');
    expect(rotated.reseal(resealed, false)).toBeNull();
    const onlyK2 = new JobCipher({ keys: { k2: K2 }, current: 'k2' });
    expect(() => onlyK2.openText(sealedWithK1, 'The payload of job "x"')).toThrow(EncryptionKeyMissingError);
    expect(onlyK2.revealText(sealedWithK1)).toBe("[encrypted: key 'k1']");
    expect(new JobCipher().revealValue(sealedWithK1)).toBe("[encrypted: key 'k1']");
  });

  it('refuses any changed byte, and a key id swapped for another key that exists', () => {
    const sealed = cipher.sealText('a value worth protecting');
    const body = sealed.slice('$enc1:k1:'.length);
    fc.assert(
      fc.property(fc.nat(body.length - 1), (at) => {
        const bytes = Buffer.from(body, 'base64');
        const i = Math.min(at, bytes.length - 1);
        bytes[i] = bytes[i]! ^ 1;
        const changed = `$enc1:k1:${bytes.toString('base64')}`;
        expect(() => cipher.openText(changed, 'v')).toThrow(EncryptedValueError);
      }),
    );
    const both = new JobCipher({ keys: { k1: K1, k2: K1 }, current: 'k1' });
    expect(() => both.openText(`$enc1:k2:${body}`, 'v')).toThrow(EncryptedValueError);
    expect(cipher.revealText(`$enc1:k1:${body.slice(0, 10)}`)).toBe("[encrypted: key 'k1', does not authenticate]");
  });

  it('errors keep their name readable and seal message and stack', () => {
    const sealed = cipher.sealError({ name: 'TypeError', message: 'bad alice', stack: 'TypeError: bad alice\n  at x' });
    expect(sealed.name).toBe('TypeError');
    expect(JSON.stringify(sealed)).not.toContain('alice');
    expect(cipher.revealError(sealed)).toEqual({
      name: 'TypeError',
      message: 'bad alice',
      stack: 'TypeError: bad alice\n  at x',
    });
  });

  it('passes plain values through', () => {
    expect(cipher.openValue({ a: 1 }, 'v')).toEqual({ a: 1 });
    expect(cipher.revealText('plain')).toBe('plain');
    expect(cipher.revealError(null)).toBeNull();
  });
});
