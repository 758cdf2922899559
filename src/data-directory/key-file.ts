// Keys kept in files beside the SQLite database (the data directory holds them all, and is what an
// operator backs up), readable by their owner only: the built-in issuer's signing key with the
// SQLite store, and the key that seals stored secrets when SECRETS_KEY is not set.
import fs from 'node:fs';
import { ensureDirectoryOf } from './data-directory';

export const SIGNING_KEY_FILE = 'issuer-key.pem';
/** The key that seals stored secrets, when SECRETS_KEY is not set (services/secret-box.ts). */
export const SECRETS_KEY_FILE = 'secrets.key';

/** The key in `file`, or the one `generate` makes now (kept in memory only for an in-memory database: null). */
export function readOrCreateKeyFile(file: string | null, generate: () => string): string {
  if (file === null) return generate();
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  ensureDirectoryOf(file);
  const pem = generate();
  try {
    // 'wx': if another process created the key meanwhile, keep theirs.
    fs.writeFileSync(file, pem, { mode: 0o600, flag: 'wx' });
    return pem;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return fs.readFileSync(file, 'utf8');
  }
}
