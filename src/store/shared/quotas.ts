// The quotas' counters held in the process, for a store that one process serves (SQLite: the serve
// lock makes it so). One entry per quota key, for its latest window; pruning drops the keys not
// used since the window it is given.
import type { QuotaRepository } from '../port';

export function inProcessQuotas(): QuotaRepository {
  const windows = new Map<string, { window: number; used: number }>();
  return {
    take: async (key, window, units, quota) => {
      let counter = windows.get(key);
      if (!counter || counter.window !== window) windows.set(key, (counter = { window, used: 0 }));
      const granted = Math.max(0, Math.min(units, quota - counter.used));
      counter.used += granted;
      return { granted, used: counter.used };
    },
    prune: async (window, limit) => {
      let pruned = 0;
      for (const [key, counter] of windows) {
        if (pruned === limit) break;
        if (counter.window < window && windows.delete(key)) pruned++;
      }
      return pruned;
    },
  };
}
