// The PostgreSQL run repository, for any number of replicas writing the same rows under READ
// COMMITTED, composed of its roles (see port/runs.ts); they share one context.
import type { RunRepository } from '../../port';
import type { PgDatabase } from '../database';
import type { Notifications } from '../notifications';
import { pgRunAcceptance } from './acceptance';
import { pgRunContext } from './context';
import { pgRunControl } from './control';
import { pgRunProgress } from './progress';
import { pgRunQueue } from './queue';
import { pgRunReads } from './reads';
import { pgRunRetention } from './retention';

export { RUNS_QUEUED_CHANNEL } from './context';

export function pgRunRepository(db: PgDatabase, notifications: Notifications, eventsLimit?: number): RunRepository {
  const ctx = pgRunContext(db, notifications, eventsLimit);
  return {
    ...pgRunAcceptance(ctx),
    ...pgRunQueue(ctx),
    ...pgRunProgress(ctx),
    ...pgRunControl(ctx),
    ...pgRunReads(ctx),
    ...pgRunRetention(ctx),
  };
}
