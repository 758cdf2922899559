// The request quotas' counters on PostgreSQL, shared by every replica: one conditional statement
// per batch taken (see port/quotas.ts).
import type { QuotaRepository } from '../port';
import type { PgDatabase } from './database';

// The total never passes the quota: the increment is capped by it, and a spent window is not
// written at all (no row comes back). `granted` is what this statement added, returned with the
// row (RETURNING sees only the new row, so the row carries it).
const TAKE = `INSERT INTO quota_windows AS q (key, window_no, used, granted) VALUES ($1, $2, LEAST($3::integer, $4::integer), LEAST($3::integer, $4::integer))
  ON CONFLICT (key, window_no) DO UPDATE SET used = LEAST(q.used + $3::integer, $4::integer), granted = LEAST(q.used + $3::integer, $4::integer) - q.used
  WHERE q.used < $4::integer
  RETURNING used, granted`;

const PRUNE = `DELETE FROM quota_windows WHERE ctid = ANY (ARRAY(SELECT ctid FROM quota_windows WHERE window_no < $1 LIMIT $2))`;

export function pgQuotaRepository(db: PgDatabase): QuotaRepository {
  return {
    take: async (key, window, units, quota) => {
      if (units <= 0 || quota <= 0) return { granted: 0, used: quota };
      const row = await db.visible.row<{ used: number; granted: number }>(TAKE, [key, window, units, quota]);
      return row ? { granted: row.granted, used: row.used } : { granted: 0, used: quota };
    },
    prune: (window, limit) => db.visible.count(PRUNE, [window, limit]),
  };
}
