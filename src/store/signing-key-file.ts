// The built-in issuer's key with the SQLite store: a file beside the database (the data directory
// holds both, and is what an operator backs up), readable by its owner only.
import fs from 'node:fs';
import { ensureDirectoryOf } from './data-directory';

export const SIGNING_KEY_FILE = 'issuer-key.pem';

/** The key in `file`, or the one `generate` makes now (kept in memory only for an in-memory database: null). */
export function signingKeyFile(file: string | null, generate: () => string): string {
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
