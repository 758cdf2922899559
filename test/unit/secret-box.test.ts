// Sealed secrets: authenticated encryption bound to the owner, opened by any listed key, sealed by
// the first (rotation), and a value stored before sealing is read as it is (then sealed at start).
import crypto from 'node:crypto';
import { createSecretBox, parseSecretKeys, SecretBoxError } from '../../src/services/secret-box';

const key = () => crypto.randomBytes(32);

test('a sealed value opens for its owner only, and reveals nothing of the plain text', () => {
  const box = createSecretBox([key()]);
  const sealed = box.seal('whsec_top-secret', 'trigger-1');
  expect(sealed).toMatch(/^enc:v1:[0-9a-f]{8}:/);
  expect(sealed).not.toContain('top-secret');
  expect(box.seal('whsec_top-secret', 'trigger-1')).not.toBe(sealed); // a fresh nonce each time
  expect(box.open(sealed, 'trigger-1')).toBe('whsec_top-secret');
  expect(() => box.open(sealed, 'trigger-2')).toThrow(SecretBoxError);
});

test('an altered value does not open', () => {
  const box = createSecretBox([key()]);
  const sealed = box.seal('whsec_x', 't');
  const parts = sealed.split(':');
  const ciphertext = Buffer.from(parts[4]!, 'base64url');
  ciphertext[0]! ^= 1;
  parts[4] = ciphertext.toString('base64url');
  expect(() => box.open(parts.join(':'), 't')).toThrow('a sealed secret does not open');
});

test('rotation: the first key seals, any listed key opens; a key no longer listed is named', () => {
  const [oldKey, newKey] = [key(), key()];
  const before = createSecretBox([oldKey]);
  const sealedOld = before.seal('whsec_old', 't');
  const after = createSecretBox([newKey, oldKey]);
  expect(after.open(sealedOld, 't')).toBe('whsec_old');
  expect(after.isCurrent(sealedOld)).toBe(false);
  expect(after.isCurrent(after.seal('whsec_new', 't'))).toBe(true);
  expect(() => createSecretBox([newKey]).open(sealedOld, 't')).toThrow(/sealed with key [0-9a-f]{8}, which SECRETS_KEY does not list/);
});

test('a value stored before sealing is read as it is, and is not current', () => {
  const box = createSecretBox([key()]);
  expect(box.open('whsec_legacy', 't')).toBe('whsec_legacy');
  expect(box.isCurrent('whsec_legacy')).toBe(false);
});

test('keys are parsed from base64 or base64url, comma-separated, 32 bytes each', () => {
  const [a, b] = [key(), key()];
  expect(parseSecretKeys(`${a.toString('base64')}, ${b.toString('base64url')}`)).toEqual([a, b]);
  expect(parseSecretKeys('c2hvcnQ=')).toBeNull();
  expect(parseSecretKeys('')).toBeNull();
});
