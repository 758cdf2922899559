// The removal of finished runs past their retention on SQLite, with their events and approvals.
import type { RunRetention } from '../../port';
import type { RunContext } from './context';

export function sqliteRunRetention(ctx: RunContext): RunRetention {
  const { db, commit, events, recent } = ctx;
  const finishedBefore = db
    .prepare('SELECT id FROM runs WHERE finished_at IS NOT NULL AND finished_at < ? ORDER BY finished_at LIMIT CAST(? AS INTEGER)')
    .pluck();
  const deleteRun = db.prepare('DELETE FROM runs WHERE id = ?');
  const deleteApprovals = db.prepare('DELETE FROM run_approvals WHERE run_id = ?');
  return {
    pruneFinished: (before, batch) =>
      commit.run(() => {
        const ids = finishedBefore.all(before, batch) as string[];
        for (const id of ids) {
          events.remove(id);
          deleteApprovals.run(id);
          deleteRun.run(id);
          recent.delete(id);
        }
        return ids.length;
      }),
  };
}
