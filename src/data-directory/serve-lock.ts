// One server per database file. The service keeps state in memory that is correct only while it is
// the file's only server (its run queue, the caches the store answers from, recovery that fails
// every run left running), so a second `build-api serve` on the same file is refused at start.
// The lock is SQLite's own: an exclusive transaction on a small sidecar database, held open for the
// process's lifetime. The operating system drops it when the process ends, however it ends (a
// killed server leaves no stale lock behind). The main file is not locked, so the CLI's short
// writes (connections, credits) go on beside a running server.
import { openSqlite } from '../sqlite-driver';
import { openInDataDirectory } from './data-directory';

export class AlreadyServingError extends Error {}

export interface ServeLock {
  release(): void;
}

/** The sidecar file that carries the lock of `databasePath`. */
export const serveLockPath = (databasePath: string) => `${databasePath}.serve-lock`;

/** Takes the lock of `databasePath`, or throws AlreadyServingError at once when another server holds it. */
export function acquireServeLock(databasePath: string): ServeLock {
  if (databasePath === ':memory:') return { release: () => undefined };
  const db = openInDataDirectory(serveLockPath(databasePath), openSqlite);
  try {
    db.pragma('busy_timeout = 0'); // refuse at once: the other server is not about to let go
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY')) {
      throw new AlreadyServingError(`${databasePath} is already served by another build-api serve; stop it first, or set DATABASE_PATH to another file`);
    }
    throw err;
  }
  return { release: () => db.close() }; // closing rolls the open transaction back and drops the lock
}
