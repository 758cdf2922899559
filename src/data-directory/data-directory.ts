// The SQLite file's directory holds the database, its serve lock and the built-in issuer's key. A
// fresh clone has none (`data/` is not committed), so whatever opens one of those files first creates
// the directory: the serve lock at `build-api serve`, the database at `build-api token` and the
// other CLI commands. When it cannot be created or written, start-up stops with one line naming
// DATABASE_PATH and the reason, rather than a stack trace from deep inside better-sqlite3.
import fs from 'node:fs';
import path from 'node:path';

/** The data directory cannot be created or the database file in it cannot be opened. */
export class DataDirectoryError extends Error {}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EEXIST: 'a part of the path is a file, not a directory',
  ENOSPC: 'no space left on the device',
};

function reason(err: unknown): string {
  const { code, message } = err as { code?: string; message?: string };
  return (code && REASONS[code]) ?? message ?? String(err);
}

/** Creates the directory `file` lives in, with any missing parents (owner-only: it will hold a private key). */
export function ensureDirectoryOf(file: string): void {
  if (file === ':memory:') return;
  const dir = path.dirname(file);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new DataDirectoryError(`DATABASE_PATH: cannot create the directory ${dir}: ${reason(err)}`);
  }
}

/** `open(file)` with the directory created first; a file that still cannot be opened becomes one line naming it. */
export function openInDataDirectory<T>(file: string, open: (file: string) => T): T {
  ensureDirectoryOf(file);
  try {
    return open(file);
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (code in REASONS) throw new DataDirectoryError(`DATABASE_PATH: cannot open ${file}: ${reason(err)}`);
    if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY') {
      throw new DataDirectoryError(
        `DATABASE_PATH: cannot open ${file}: ${isDirectory(file) ? 'it is a directory' : `${(err as Error).message} (is ${path.dirname(file)} writable?)`}`,
      );
    }
    throw err;
  }
}

function isDirectory(file: string): boolean {
  try {
    return fs.statSync(file).isDirectory();
  } catch {
    return false;
  }
}
