// The SQLite run repository, composed of its roles (see port/runs.ts); they share one context.
import type { RunRepository } from '../../port';
import type { Db } from '../database';
import type { GroupCommit } from '../group-commit';
import { sqliteRunAcceptance } from './acceptance';
import { runContext } from './context';
import { sqliteRunControl } from './control';
import { sqliteRunProgress } from './progress';
import { sqliteRunQueue } from './queue';
import { sqliteRunReads } from './reads';
import { sqliteRunRetention } from './retention';

export function sqliteRunRepository(db: Db, commit: GroupCommit): RunRepository {
  const ctx = runContext(db, commit);
  return {
    ...sqliteRunAcceptance(ctx),
    ...sqliteRunQueue(ctx),
    ...sqliteRunProgress(ctx),
    ...sqliteRunControl(ctx),
    ...sqliteRunReads(ctx),
    ...sqliteRunRetention(ctx),
  };
}
