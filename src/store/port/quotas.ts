// The request quotas' shared counters (services/rate-limits.ts): how many units of a quota's window
// the service's processes have taken. A process takes units in small batches and spends them
// itself, so most requests touch no counter.

export interface QuotaTake {
  /** Units granted now: from 0 (the window is spent) up to the units asked for. */
  granted: number;
  /** The window's units taken by every process, this grant included (when none is granted: at least the quota). */
  used: number;
}

export interface QuotaRepository {
  /**
   * Takes up to `units` of window `window` (a number naming it) of the quota `key`, never letting
   * the window's total pass `quota`, in one conditional write: processes taking at once never get
   * more than `quota` between them.
   */
  take(key: string, window: number, units: number, quota: number): Promise<QuotaTake>;
  /** Forgets windows numbered below `window`; how many were forgotten (maintenance). */
  prune(window: number, limit: number): Promise<number>;
}
