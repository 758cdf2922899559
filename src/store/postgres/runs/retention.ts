// The removal of finished runs past their retention on PostgreSQL, with their events and approvals.
import type { RunRetention } from '../../port';
import type { PgRunContext } from './context';

export function pgRunRetention(ctx: PgRunContext): RunRetention {
  return {
    pruneFinished: (before, batch) =>
      ctx.write(async (tx) => {
        // SKIP LOCKED: replicas pruning at once delete different runs.
        const gone = await tx.rows<{ id: string }>(
          `DELETE FROM runs WHERE id IN
             (SELECT id FROM runs WHERE finished_at IS NOT NULL AND finished_at < $1 ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)
           RETURNING id`,
          [before, batch],
        );
        const ids = gone.map((r) => r.id);
        if (!ids.length) return 0;
        await ctx.events.remove(tx, ids);
        await tx.count('DELETE FROM run_approvals WHERE run_id = ANY($1::text[])', [ids]);
        return ids.length;
      }, 'visible'),
  };
}
