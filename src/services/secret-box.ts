// Secrets the service must be able to read again are kept sealed: the Standard Webhooks signing keys
// (an HMAC key cannot be hashed, as the URL secrets are). AES-256-GCM, authenticated encryption, with
// the owning trigger's id as associated data (a sealed value copied onto another trigger does not
// open). The key comes from SECRETS_KEY, or by default from a key file beside the issuer's key, as
// n8n keeps its encryption key: a copy of the database alone reveals no secret.
//
// Rotation: SECRETS_KEY may list several keys, comma-separated. The first seals; any opens (a
// sealed value names the key that sealed it), and at start every stored value not sealed with the
// first is sealed again (resealSigningSecrets). docs/deployment.md gives the order of a rollout.
import crypto from 'node:crypto';

/** The mark of a sealed value: `enc:v1:<key id>:<iv>:<ciphertext>:<tag>` (base64url parts). */
const PREFIX = 'enc:v1:';
export const SECRET_KEY_BYTES = 32;

export class SecretBoxError extends Error {}

export interface SecretBox {
  /** `plain` sealed for `context` (the owner's id). */
  seal(plain: string, context: string): string;
  /** The plain text of a sealed value (a value stored before sealing existed is returned as it is). */
  open(stored: string, context: string): string;
  /** Whether `stored` is sealed with the first key (else it should be sealed again). */
  isCurrent(stored: string): boolean;
}

const keyId = (key: Buffer) => crypto.createHash('sha256').update(key).digest('hex').slice(0, 8);

export function createSecretBox(keys: readonly Buffer[]): SecretBox {
  if (!keys.length || keys.some((k) => k.length !== SECRET_KEY_BYTES)) throw new SecretBoxError(`secret keys must be ${SECRET_KEY_BYTES} bytes`);
  const byId = new Map(keys.map((k) => [keyId(k), k]));
  const current = keys[0] as Buffer;
  const currentId = keyId(current);
  return {
    seal(plain, context) {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(Buffer.from(context));
      const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${PREFIX}${currentId}:${iv.toString('base64url')}:${sealed.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}`;
    },
    open(stored, context) {
      if (!stored.startsWith(PREFIX)) return stored;
      const [id = '', iv = '', sealed = '', tag = ''] = stored.slice(PREFIX.length).split(':');
      const key = byId.get(id);
      if (!key) throw new SecretBoxError(`a secret is sealed with key ${id}, which SECRETS_KEY does not list`);
      try {
        const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(context));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretBoxError('a sealed secret does not open: it was altered, or sealed for another owner');
      }
    },
    isCurrent: (stored) => stored.startsWith(`${PREFIX}${currentId}:`),
  };
}

/** A new key as SECRETS_KEY and the key file hold it: 32 random bytes, base64. */
export const generateSecretKey = () => crypto.randomBytes(SECRET_KEY_BYTES).toString('base64');

/** Keys from their text (SECRETS_KEY, or the key file): base64 or base64url, comma-separated; null when one is not 32 bytes. */
export function parseSecretKeys(text: string): Buffer[] | null {
  const keys = text
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)
    .map((k) => Buffer.from(k, 'base64'));
  return keys.length && keys.every((k) => k.length === SECRET_KEY_BYTES) ? keys : null;
}
